#include "staging.h"

#include <ATen/MemoryOverlap.h>

namespace c10d_torch {
namespace {

constexpr const char* kSupportedDtypes =
    "float32, float64, float16, bfloat16, int8, uint8, int32, int64, bool";

// torch dtype -> c10d dtype; false for a dtype libc10d does not have.
bool toC10dDtype(at::ScalarType type, c10d_dtype_t* out) {
  switch (type) {
    case at::kFloat:
      *out = C10D_FLOAT32;
      return true;
    case at::kDouble:
      *out = C10D_FLOAT64;
      return true;
    case at::kHalf:
      *out = C10D_FLOAT16;
      return true;
    case at::kBFloat16:
      *out = C10D_BFLOAT16;
      return true;
    case at::kChar:
      *out = C10D_INT8;
      return true;
    case at::kByte:
      *out = C10D_UINT8;
      return true;
    case at::kInt:
      *out = C10D_INT32;
      return true;
    case at::kLong:
      *out = C10D_INT64;
      return true;
    case at::kBool:
      *out = C10D_BOOL;
      return true;
    default:
      return false;
  }
}

}  // namespace

c10d_dtype_t checkTensor(const std::string& ctx, const at::Tensor& t, const std::string& what) {
  TORCH_CHECK(t.defined(), ctx, ": ", what, " is an undefined tensor");
  TORCH_CHECK(t.layout() == at::kStrided, ctx, ": ", what, " has layout ", t.layout(),
              "; the c10d backend takes dense (strided) tensors");
  TORCH_CHECK(t.device().is_cpu(), ctx, ": ", what, " is on ", t.device(),
              "; the c10d backend takes CPU tensors");
  c10d_dtype_t dtype;
  TORCH_CHECK(toC10dDtype(t.scalar_type(), &dtype), ctx, ": ", what, " has dtype ", t.scalar_type(),
              ", which the c10d backend does not support (it takes ", kSupportedDtypes, ")");
  return dtype;
}

c10d_tensor_t Staging::viewOf(const at::Tensor& contiguous, c10d_dtype_t dtype) const {
  return c10d_tensor_cpu(contiguous.numel() > 0 ? contiguous.data_ptr() : nullptr,
                         static_cast<uint64_t>(contiguous.numel()), dtype);
}

c10d_dtype_t Staging::checkOutput(const at::Tensor& t, const std::string& what) const {
  const c10d_dtype_t dtype = checkTensor(ctx_, t, what);
  // Elements sharing memory (stride 0: expand(); some as_strided views) have no one value to hold
  // the result; torch's own in-place ops refuse them the same way.
  TORCH_CHECK(at::has_internal_overlap(t) != at::MemOverlap::Yes, ctx_, ": ", what,
              " has elements that share memory (sizes ", t.sizes(), ", strides ", t.strides(),
              "), so it cannot receive a result; pass tensor.clone()");
  return dtype;
}

c10d_tensor_t Staging::in(const at::Tensor& t, const std::string& what) {
  const c10d_dtype_t dtype = checkTensor(ctx_, t, what);
  if (t.is_contiguous()) {
    return viewOf(t, dtype);
  }
  at::Tensor buffer = t.contiguous();
  kept_.push_back(buffer);
  return viewOf(buffer, dtype);
}

c10d_tensor_t Staging::out(const at::Tensor& t, const std::string& what) {
  const c10d_dtype_t dtype = checkOutput(t, what);
  if (t.is_contiguous()) {
    return viewOf(t, dtype);
  }
  at::Tensor buffer = at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::Contiguous));
  const c10d_tensor_t view = viewOf(buffer, dtype);
  copyBackLater(t, std::move(buffer));
  return view;
}

c10d_tensor_t Staging::inOut(const at::Tensor& t, const std::string& what) {
  const c10d_dtype_t dtype = checkOutput(t, what);
  if (t.is_contiguous()) {
    return viewOf(t, dtype);
  }
  at::Tensor buffer = t.contiguous();
  const c10d_tensor_t view = viewOf(buffer, dtype);
  copyBackLater(t, std::move(buffer));
  return view;
}

std::vector<c10d_tensor_t> Staging::ins(const std::vector<at::Tensor>& ts,
                                        const std::string& what) {
  std::vector<c10d_tensor_t> views;
  views.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    views.push_back(in(ts[i], what + "[" + std::to_string(i) + "]"));
  }
  return views;
}

std::vector<c10d_tensor_t> Staging::outs(const std::vector<at::Tensor>& ts,
                                         const std::string& what) {
  std::vector<c10d_tensor_t> views;
  views.reserve(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    views.push_back(out(ts[i], what + "[" + std::to_string(i) + "]"));
  }
  return views;
}

void Staging::copyBackLater(const at::Tensor& dst, at::Tensor src) {
  copies_.emplace_back(dst, std::move(src));
}

void Staging::copyBack() {
  // detach(): the op wrote the caller's tensor the way torch's backends do, outside autograd (a
  // leaf that requires grad would refuse an in-place copy_ otherwise); it still bumps the
  // tensor's version counter, which the detached view shares.
  for (auto& [dst, src] : copies_) {
    dst.detach().copy_(src.view(dst.sizes()));
  }
  copies_.clear();
  kept_.clear();
}

}  // namespace c10d_torch
