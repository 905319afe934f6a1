// FlatBuffer: one contiguous allocation holding several tensors of one (dtype, device) back to
// back, each reachable as a view. A DDP gradient bucket is one; a ZeRO shard or a flat optimizer
// state can be another.
//
// Ownership: the buffer owns its memory through a shared pointer (storage()), so a collective in
// flight can keep it alive past the FlatBuffer (capture storage() in the Work's callback). Views
// are plain Tensors into that memory: valid while some owner of storage() lives.
// Not thread-safe to mutate; const methods may be called from any thread.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/layers/common/device_ops.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

class FlatBuffer {
 public:
  FlatBuffer() = default;
  // Zero-filled memory for members of numels[k] elements each, in that order.
  FlatBuffer(DataType dtype, Device device, const std::vector<size_t>& numels, DeviceOps& ops);

  DataType dtype() const { return dtype_; }
  Device device() const { return device_; }
  // Number of members.
  size_t size() const { return numels_.size(); }
  // Total elements and bytes.
  size_t numel() const { return total_; }
  size_t nbytes() const { return total_ * elementSize(dtype_); }
  // Element offset and element count of member k.
  size_t offset(size_t k) const { return offsets_.at(k); }
  size_t numel(size_t k) const { return numels_.at(k); }

  // The whole buffer, and member k, as views.
  Tensor tensor() const;
  Tensor view(size_t k) const;
  const std::shared_ptr<void>& storage() const { return storage_; }

 private:
  DataType dtype_ = DataType::kFloat32;
  Device device_ = Device::cpu();
  std::vector<size_t> numels_;
  std::vector<size_t> offsets_;
  size_t total_ = 0;
  std::shared_ptr<void> storage_;
};

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
