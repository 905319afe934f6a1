#include "c10d/layers/ddp/comm_hooks.h"

#include <cstdint>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/float16.h"
#include "c10d/core/backend_work.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace ddp {

std::shared_ptr<Work> chainWork(const std::shared_ptr<Work>& inner, std::function<void()> then) {
  C10D_CHECK(inner != nullptr, "chainWork: null Work");
  auto done = std::make_shared<BackendWork>(inner->opType(), inner->sequenceNumber(),
                                            inner->groupName(), inner->timeout());
  inner->then([done, then = std::move(then)](Work& w) {
    std::exception_ptr error = w.exception();
    if (!error) {
      try {
        then();
      } catch (...) {
        error = std::current_exception();
      }
    }
    done->finish(error);
  });
  return done;
}

namespace {

void checkCpuBucket(const GradBucket& bucket, const char* hook) {
  C10D_CHECK_ARG(bucket.buffer.device.isCPU(), hook, ": bucket ", bucket.index, " is on ",
                 toString(bucket.buffer.device),
                 "; the built-in hooks convert on the host (write a device hook for GPU buckets)");
}

std::shared_ptr<Work> sumThenDivide(ProcessGroup& group, const GradBucket& bucket) {
  const Tensor buffer = bucket.buffer;
  const int64_t ws = group.size();
  auto work = group.allreduce(buffer, AllreduceOptions{ReduceOp::SUM, kUnsetTimeout});
  return chainWork(work, [buffer, ws] {
    if (buffer.numel > 0 && ws != 1) divide(buffer.data, buffer.numel, buffer.dtype, ws);
  });
}

// Narrows (value / ws) of every element into 16-bit words, allreduces them as `wire`, and widens
// the sum back into the bucket on completion.
template <typename Narrow, typename Widen>
std::shared_ptr<Work> compressed(ProcessGroup& group, const GradBucket& bucket, DataType wire,
                                 Narrow narrow, Widen widen) {
  const Tensor buffer = bucket.buffer;
  if (buffer.dtype != DataType::kFloat32 && buffer.dtype != DataType::kFloat64) {
    return sumThenDivide(group, bucket);
  }
  const size_t n = buffer.numel;
  const double inv = 1.0 / group.size();
  auto half = std::make_shared<std::vector<uint16_t>>(n + 1);  // +1: never a null pointer
  uint16_t* h = half->data();
  if (buffer.dtype == DataType::kFloat32) {
    const float* src = buffer.ptr<float>();
    const float invf = static_cast<float>(inv);
    for (size_t i = 0; i < n; ++i) h[i] = narrow(src[i] * invf);
  } else {
    const double* src = buffer.ptr<double>();
    for (size_t i = 0; i < n; ++i) h[i] = narrow(static_cast<float>(src[i] * inv));
  }
  auto work = group.allreduce(Tensor(h, n, wire, buffer.device),
                              AllreduceOptions{ReduceOp::SUM, kUnsetTimeout});
  return chainWork(work, [half, buffer, n, widen] {
    const uint16_t* s = half->data();
    if (buffer.dtype == DataType::kFloat32) {
      float* dst = buffer.ptr<float>();
      for (size_t i = 0; i < n; ++i) dst[i] = widen(s[i]);
    } else {
      double* dst = buffer.ptr<double>();
      for (size_t i = 0; i < n; ++i) dst[i] = widen(s[i]);
    }
  });
}

}  // namespace

CommHook allreduceHook() {
  return [](ProcessGroup& group, const GradBucket& bucket) {
    checkCpuBucket(bucket, "allreduceHook");
    return sumThenDivide(group, bucket);
  };
}

CommHook fp16CompressHook() {
  return [](ProcessGroup& group, const GradBucket& bucket) {
    checkCpuBucket(bucket, "fp16CompressHook");
    return compressed(group, bucket, DataType::kFloat16, detail::floatToHalfInline,
                      detail::halfToFloatInline);
  };
}

CommHook bf16CompressHook() {
  return [](ProcessGroup& group, const GradBucket& bucket) {
    checkCpuBucket(bucket, "bf16CompressHook");
    return compressed(group, bucket, DataType::kBFloat16, detail::floatToBf16Inline,
                      detail::bf16ToFloatInline);
  };
}

}  // namespace ddp
C10D_NAMESPACE_END
}  // namespace c10d
