// Image recognition (the paper's ImgDNN): a multi-layer perceptron, trained at data-build
// time on Fashion-MNIST, classifies one held-out 28x28 image per request. Its weights are
// the read-only data set the resource manager can replicate onto each stack.
#include <atomic>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "pimcloud/harness/replication.h"
#include "pimcloud/harness/runner.h"

namespace {

using namespace pimcloud::harness;

constexpr std::size_t kPixels = 28 * 28;

std::vector<std::byte> slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw std::runtime_error(path + " is missing; build the data set with "
                             "`pimcloud workload data --only imgdnn`");
  }
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

// model.bin: u32 L, u32 sizes[L+1], then per layer float32 W[in][out], b[out].
std::vector<std::byte> load_model(const std::string& path, std::vector<std::uint32_t>& sizes) {
  std::vector<std::byte> blob = slurp(path);
  std::uint32_t layers = 0;
  std::memcpy(&layers, blob.data(), 4);
  if (layers == 0 || layers > 16) throw std::runtime_error(path + ": not a model.bin");
  sizes.resize(layers + 1);
  std::memcpy(sizes.data(), blob.data() + 4, 4 * sizes.size());
  std::size_t floats = 0;
  for (std::uint32_t l = 0; l < layers; ++l) floats += sizes[l] * sizes[l + 1] + sizes[l + 1];
  const std::size_t header = 4 * (sizes.size() + 1);
  if (blob.size() != header + 4 * floats || sizes.front() != kPixels) {
    throw std::runtime_error(path + ": size does not match its layer sizes; rebuild the data");
  }
  return {blob.begin() + static_cast<std::ptrdiff_t>(header), blob.end()};
}

class ImgDnn final : public Service {
 public:
  explicit ImgDnn(const ServiceArgs& args)
      : weights_(load_model(args.data_dir + "/imgdnn/model.bin", sizes_)),
        images_(slurp(args.data_dir + "/imgdnn/test-images.u8")),
        labels_(slurp(args.data_dir + "/imgdnn/test-labels.u8")) {
    if (images_.size() != labels_.size() * kPixels || labels_.empty()) {
      throw std::runtime_error("imgdnn: test-images.u8 and test-labels.u8 disagree; rebuild");
    }
  }

  Request make_request(Rng& rng) override { return {std::to_string(rng() % labels_.size())}; }

  Response serve(const Request& request, int /*worker*/) override {
    const std::size_t index = std::stoul(request.body);
    const auto* weights = reinterpret_cast<const float*>(weights_.local());  // this stack's copy
    const auto* pixels = reinterpret_cast<const unsigned char*>(images_.data()) + index * kPixels;
    std::vector<float> in(kPixels), out;
    for (std::size_t i = 0; i < kPixels; ++i) in[i] = static_cast<float>(pixels[i]) / 255.0f;
    for (std::size_t l = 0; l + 1 < sizes_.size(); ++l) {
      const std::size_t n_in = sizes_[l], n_out = sizes_[l + 1];
      const float* w = weights;
      const float* b = weights + n_in * n_out;
      out.assign(b, b + n_out);
      for (std::size_t i = 0; i < n_in; ++i) {
        const float x = in[i];
        if (x == 0.0f) continue;
        const float* row = w + i * n_out;
        for (std::size_t o = 0; o < n_out; ++o) out[o] += x * row[o];
      }
      if (l + 2 < sizes_.size()) {
        for (auto& v : out) v = v > 0 ? v : 0;
      }
      weights = b + n_out;
      in.swap(out);
    }
    std::size_t best = 0;
    for (std::size_t k = 1; k < in.size(); ++k) {
      if (in[k] > in[best]) best = k;
    }
    ++classified_;
    if (best == static_cast<std::size_t>(labels_[index])) ++correct_;
    return {std::to_string(best)};
  }

  bool check(const Request& /*request*/, const Response& response) override {
    return response.body.size() == 1 && response.body[0] >= '0' &&
           response.body[0] < static_cast<char>('0' + sizes_.back());
  }

  std::string finish() override {
    const double n = static_cast<double>(classified_.load());
    return "{\"engine\":\"mlp\",\"layers\":" + std::to_string(sizes_.size() - 1) +
           ",\"weights_bytes\":" + std::to_string(weights_.size()) +
           ",\"classified\":" + std::to_string(classified_.load()) +
           ",\"accuracy\":" + std::to_string(n > 0 ? static_cast<double>(correct_) / n : 0.0) +
           "}";
  }

  bool replicate(int node, std::string& error) override { return weights_.replicate(node, error); }
  bool drop_replica(int node, std::string& error) override { return weights_.drop(node, error); }

 private:
  std::vector<std::uint32_t> sizes_;
  ReplicatedRegion weights_;
  std::vector<std::byte> images_, labels_;
  std::atomic<std::uint64_t> classified_{0}, correct_{0};
};

std::unique_ptr<Service> make(const ServiceArgs& args) { return std::make_unique<ImgDnn>(args); }

}  // namespace

int main(int argc, char** argv) { return harness_main("imgdnn", make, argc, argv); }
