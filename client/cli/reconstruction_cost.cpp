#include "client/cli/reconstruction_cost.hpp"

#include <limits>
#include <stdexcept>

namespace svdserve::cli {

double relative_error(const cv::Mat& original, const cv::Mat& reconstruction) {
  if (original.size() != reconstruction.size() || original.channels() != reconstruction.channels()) {
    throw std::invalid_argument("the reconstruction's shape differs from the original's");
  }
  cv::Mat original_f64;
  cv::Mat reconstruction_f64;
  original.convertTo(original_f64, CV_64F);
  reconstruction.convertTo(reconstruction_f64, CV_64F);
  const double difference = cv::norm(original_f64, reconstruction_f64, cv::NORM_L2);
  const double norm = cv::norm(original_f64, cv::NORM_L2);
  if (norm == 0.0) return difference == 0.0 ? 0.0 : std::numeric_limits<double>::infinity();
  return difference / norm;
}

}  // namespace svdserve::cli
