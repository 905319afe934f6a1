// DDP communication hooks: how the Reducer turns a full gradient bucket into the averaged bucket.
//
// A hook receives the bucket (a flat view of its gradients plus which parameters they are) when the
// bucket is launched, starts whatever communication it wants on the group, and returns a Work whose
// successful completion means the bucket's buffer holds the final result (the Reducer does not
// divide when a hook is set: the hook owns the averaging, as in torch). It runs on the thread that
// launched the bucket (a markReady caller, or finalize()), under the Reducer's lock: it must not
// call back into the Reducer, must not block for long, and must issue its collectives in the same
// order on every rank. The buffer view stays valid until finalize() returns; the hook keeps
// anything else it allocates alive itself (e.g. captured in the Work's callback). A hook that
// throws makes markReady()/finalize() throw that error and leaves the Reducer unusable.
//
// Built-in hooks (CPU buckets; all three give the same mean as the Reducer's default path within
// the precision of the wire format):
//   allreduceHook()      SUM allreduce, then divide by the world size when it completes.
//   fp16CompressHook()   as torch's fp16_compress_hook: divide by the world size in full precision,
//   bf16CompressHook()   round to IEEE half / bfloat16, SUM-allreduce the half-size copy, and
//                        widen the result back into the bucket. Halves the bytes on the wire; the
//                        result carries the half format's rounding (~2^-11 / ~2^-8 relative per
//                        element and per rank for each rank's input; the sum itself is rounded
//                        once on verbs, which keeps it in f32, and at every step on gloo).
//                        Buckets that are not f32/f64 are reduced as by allreduceHook().
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace ddp {

struct GradBucket {
  size_t index = 0;                // bucket index (launch order)
  bool isLast = false;             // the last bucket of the iteration
  Tensor buffer;                   // the bucket's flat gradients, in place
  std::vector<size_t> parameters;  // parameter indices, in bucket order
  std::vector<size_t> offsets;     // element offset of each parameter in `buffer`
  std::vector<size_t> numels;      // element count of each parameter
};

using CommHook =
    std::function<std::shared_ptr<Work>(ProcessGroup& group, const GradBucket& bucket)>;

CommHook allreduceHook();
CommHook fp16CompressHook();
CommHook bf16CompressHook();

// A Work that completes after `inner` does and `then` has run on the completing thread (only when
// `inner` succeeded); an exception from `then` becomes the Work's error. For hooks that
// post-process a collective's result.
std::shared_ptr<Work> chainWork(const std::shared_ptr<Work>& inner, std::function<void()> then);

}  // namespace ddp
C10D_NAMESPACE_END
}  // namespace c10d
