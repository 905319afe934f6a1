// Staging: the flat buffers libc10d runs one op on, for the tensors torch hands the op.
//
// libc10d takes (pointer, element count, dtype): a dense, contiguous run of elements. torch hands a
// backend any strided CPU tensor: transposed, sliced, channels-last. Like torch's gloo backend,
// the plugin runs a non-contiguous tensor's op on a contiguous copy: an input is copied before the
// op starts (on the calling thread), an output is copied back into the caller's tensor once the op
// has succeeded (on the thread that completes it, before the Work's Future completes, so wait()
// and Future callbacks see the result). A contiguous tensor is passed as it is, with no copy.
//
// Contract
//   Each in/out/inOut call checks the tensor first (defined, strided, on the CPU, of a dtype
//   libc10d has; an output must not have elements that share memory, as an expanded tensor's do)
//   and raises c10::Error naming the op context and the argument ("output_tensors[0][2]") when it
//   fails, before anything is communicated. The Staging owns every buffer it made: it must outlive
//   the op (WorkC10d keeps it until completion). copyBack() runs once, after a successful op;
//   after a failed op the caller's non-contiguous outputs are left as they were.
//
// Threads: built and used by one thread at a time (the issuing thread, then the completing one).
#ifndef C10D_INTEGRATIONS_TORCH_STAGING_H_
#define C10D_INTEGRATIONS_TORCH_STAGING_H_

#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

#include "capi.h"

namespace c10d_torch {

// Raises c10::Error unless libc10d can take `t`'s elements (defined, strided, CPU, known dtype);
// returns its libc10d dtype. `what` names the argument in messages.
c10d_dtype_t checkTensor(const std::string& ctx, const at::Tensor& t, const std::string& what);

class Staging {
 public:
  explicit Staging(std::string ctx) : ctx_(std::move(ctx)) {}

  // The view libc10d reads of `t` (a contiguous copy if `t` is not contiguous).
  c10d_tensor_t in(const at::Tensor& t, const std::string& what);
  // The view libc10d writes for `t` (a contiguous buffer copied into `t` by copyBack()).
  c10d_tensor_t out(const at::Tensor& t, const std::string& what);
  // Read and written (in place: broadcast, allreduce, reduce): a contiguous copy, copied back.
  c10d_tensor_t inOut(const at::Tensor& t, const std::string& what);

  // Lists of tensors, named what[0], what[1], ...
  std::vector<c10d_tensor_t> ins(const std::vector<at::Tensor>& ts, const std::string& what);
  std::vector<c10d_tensor_t> outs(const std::vector<at::Tensor>& ts, const std::string& what);

  // The checks out() makes, without staging anything (for an output filled by copyBackLater);
  // returns t's libc10d dtype.
  c10d_dtype_t checkOutput(const at::Tensor& t, const std::string& what) const;

  // Has copyBack() copy `src` (of dst's element count and dtype, contiguous) into `dst`.
  void copyBackLater(const at::Tensor& dst, at::Tensor src);
  // Keeps `t` alive until the Staging goes (a buffer the op reads or writes).
  void keep(at::Tensor t) { kept_.push_back(std::move(t)); }

  // Copies every staged output into the caller's tensor. Throws c10::Error if a copy fails.
  void copyBack();

 private:
  c10d_tensor_t viewOf(const at::Tensor& contiguous, c10d_dtype_t dtype) const;

  std::string ctx_;
  std::vector<at::Tensor> kept_;                           // buffers libc10d reads or writes
  std::vector<std::pair<at::Tensor, at::Tensor>> copies_;  // (caller's tensor, buffer)
};

}  // namespace c10d_torch

#endif  // C10D_INTEGRATIONS_TORCH_STAGING_H_
