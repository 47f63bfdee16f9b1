#include "convert/safetensors_source.h"

#include <cstring>

#include "core/error.h"
#include "io/safetensors.h"

namespace bertrt::convert {
namespace {

class SafetensorsReader : public CheckpointReader, public ZeroCopyReader {
 public:
  explicit SafetensorsReader(SafetensorsFile file) : file_(std::move(file)) {
    for (const SafetensorsTensor& t : file_.tensors())
      tensors_.push_back(CheckpointTensor{t.name, t.dtype, t.shape, t.nbytes, file_.path()});
  }
  std::string format() const override { return "safetensors"; }
  const std::vector<CheckpointTensor>& tensors() const override { return tensors_; }
  std::vector<uint8_t> read(size_t i) const override {
    const uint8_t* p = view(i);
    return std::vector<uint8_t>(p, p + tensors_.at(i).nbytes);
  }
  const uint8_t* view(size_t i) const override { return file_.tensors().at(i).data; }

 private:
  SafetensorsFile file_;
  std::vector<CheckpointTensor> tensors_;
};

}  // namespace

const uint8_t* tensor_view(const CheckpointReader& r, size_t i) {
  const auto* z = dynamic_cast<const ZeroCopyReader*>(&r);
  return z ? z->view(i) : nullptr;
}

std::unique_ptr<CheckpointReader> open_safetensors(const std::string& path) {
  return std::make_unique<SafetensorsReader>(SafetensorsFile::open(path));
}

}  // namespace bertrt::convert
