#pragma once
// A picture of an image's singular values: above, each channel's values by rank on a log scale
// (one colour per channel, a legend); below, the cumulative energy by rank on a "nines" scale
// (90%, 99%, 99.9%, ... equally spaced), with the ranks reaching kMarkedEnergyFractions marked by
// vertical lines and labels. Both panels share the rank axis.

#include <cstddef>
#include <string>

#include <opencv2/core.hpp>

#include "client/cli/energy_ranks.hpp"

namespace svdserve::cli {

inline constexpr int kSpectrumPlotWidthPx = 960;
inline constexpr int kSpectrumPlotHeightPx = 640;
inline const cv::Scalar kEnergyCurveColour{0, 130, 240};  // BGR orange.

// The colour of a channel's curve: blue, green, red (OpenCV's channel order) and purple for
// alpha; dark grey for a grey image's one channel.
[[nodiscard]] cv::Scalar channel_colour(std::size_t channel, std::size_t channels) noexcept;
// "blue", "green", "red", "alpha", "grey".
[[nodiscard]] std::string channel_name(std::size_t channel, std::size_t channels);

// Where the panels' plot areas are in the picture (inside the axes).
struct SpectrumPlotAreas {
  cv::Rect values;
  cv::Rect energy;
};
[[nodiscard]] SpectrumPlotAreas spectrum_plot_areas(cv::Size size);

// 8-bit BGR, size pixels; title goes above the panels. Throws std::invalid_argument when no
// channel has a value.
[[nodiscard]] cv::Mat draw_spectrum_plot(const ChannelSpectra& spectra, const std::string& title,
                                         cv::Size size = {kSpectrumPlotWidthPx, kSpectrumPlotHeightPx});

}  // namespace svdserve::cli
