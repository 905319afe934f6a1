#include "c10d/layers/common/flat_buffer.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace layers {

FlatBuffer::FlatBuffer(DataType dtype, Device device, const std::vector<size_t>& numels,
                       DeviceOps& ops)
    : dtype_(dtype), device_(device), numels_(numels) {
  offsets_.reserve(numels_.size());
  for (size_t n : numels_) {
    offsets_.push_back(total_);
    total_ += n;
  }
  storage_ = ops.allocate(device_, nbytes());
}

Tensor FlatBuffer::tensor() const {
  return Tensor(storage_.get(), total_, dtype_, device_);
}

Tensor FlatBuffer::view(size_t k) const {
  return tensor().slice(offsets_.at(k), numels_.at(k));
}

}  // namespace layers
C10D_NAMESPACE_END
}  // namespace c10d
