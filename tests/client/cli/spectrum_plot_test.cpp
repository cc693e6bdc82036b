// The spectrum plot: its size, the channels' curves, the energy curve and the marked ranks.

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "client/cli/spectrum_plot.hpp"

namespace svdserve::cli {
namespace {

// Pixels of `area` within a small distance of the colour (anti-aliased lines blend at the edges).
int pixels_of_colour(const cv::Mat& plot, cv::Rect area, cv::Scalar colour) {
  constexpr double kTolerance = 12;
  cv::Mat mask;
  cv::inRange(plot(area), colour - cv::Scalar::all(kTolerance), colour + cv::Scalar::all(kTolerance), mask);
  return cv::countNonZero(mask);
}

// Three channels decaying at different rates over 200 ranks.
ChannelSpectra decaying_spectra() {
  ChannelSpectra spectra(3);
  for (int k = 0; k < 200; ++k) {
    spectra[0].push_back(static_cast<float>(1000.0 * std::exp(-0.05 * k)));
    spectra[1].push_back(static_cast<float>(800.0 * std::exp(-0.03 * k)));
    spectra[2].push_back(static_cast<float>(500.0 / (1 + k)));
  }
  return spectra;
}

TEST(SpectrumPlot, SizeAndType) {
  const cv::Mat plot = draw_spectrum_plot(decaying_spectra(), "test");
  EXPECT_EQ(plot.size(), cv::Size(kSpectrumPlotWidthPx, kSpectrumPlotHeightPx));
  EXPECT_EQ(plot.type(), CV_8UC3);
  EXPECT_EQ(draw_spectrum_plot(decaying_spectra(), "test", {640, 480}).size(), cv::Size(640, 480));
}

// Each channel's colour is drawn in the values panel and not in the energy panel, whose curve has
// its own colour.
TEST(SpectrumPlot, EachChannelAndTheEnergyHaveTheirCurves) {
  const cv::Mat plot = draw_spectrum_plot(decaying_spectra(), "test");
  const SpectrumPlotAreas areas = spectrum_plot_areas(plot.size());
  for (std::size_t c = 0; c < 3; ++c) {
    EXPECT_GT(pixels_of_colour(plot, areas.values, channel_colour(c, 3)), 300) << channel_name(c, 3);
    EXPECT_EQ(pixels_of_colour(plot, areas.energy, channel_colour(c, 3)), 0) << channel_name(c, 3);
  }
  EXPECT_GT(pixels_of_colour(plot, areas.energy, kEnergyCurveColour), 300);
  EXPECT_EQ(pixels_of_colour(plot, areas.values, kEnergyCurveColour), 0);
}

// The marked ranks are vertical lines at their x: rank 1 at the left edge, 200 at the right.
TEST(SpectrumPlot, MarkedRanksAreVerticalLines) {
  // One channel whose shares first reach 90% at rank 50 (0.88 before it, 0.905 with it), 99% at
  // 100 (0.985, 0.994) and 99.9% at 150 (0.9985, 0.9995).
  ChannelSpectra spectra(1);
  const auto add = [&](int count, double energy_each) {
    for (int i = 0; i < count; ++i) spectra[0].push_back(static_cast<float>(std::sqrt(energy_each)));
  };
  add(49, 0.88 / 49);
  add(1, 0.025);
  add(49, 0.08 / 49);
  add(1, 0.009);
  add(49, 0.0045 / 49);
  add(1, 0.001);
  add(50, 0.0005 / 50);
  const auto cumulative = cumulative_energy(spectra);
  ASSERT_EQ(rank_for_energy(cumulative, 0.9), 50u);
  ASSERT_EQ(rank_for_energy(cumulative, 0.99), 100u);
  ASSERT_EQ(rank_for_energy(cumulative, 0.999), 150u);

  const cv::Mat plot = draw_spectrum_plot(spectra, "marked");
  const SpectrumPlotAreas areas = spectrum_plot_areas(plot.size());
  const cv::Scalar marker{110, 110, 110};
  for (const int rank : {50, 100, 150}) {
    const int x = areas.values.x +
                  static_cast<int>(std::lround((rank - 1) / 199.0 * (areas.values.width - 1)));
    // Most of the column through the values panel is the marker's grey (curves cross it).
    const cv::Rect column(x, areas.values.y + 1, 1, areas.values.height - 2);
    EXPECT_GT(pixels_of_colour(plot, column, marker), areas.values.height / 2) << "rank " << rank;
  }
  // Not at a rank that is not marked.
  const int unmarked_x = areas.values.x + static_cast<int>(std::lround(74 / 199.0 * (areas.values.width - 1)));
  EXPECT_LT(pixels_of_colour(plot, {unmarked_x, areas.values.y + 1, 1, areas.values.height - 2}, marker), 20);
}

// Pixels of `area` darker than light grey in every channel: anti-aliased text.
int dark_pixels(const cv::Mat& plot, cv::Rect area) {
  cv::Mat mask;
  cv::inRange(plot(area), cv::Scalar::all(0), cv::Scalar::all(150), mask);
  return cv::countNonZero(mask);
}

// Labels: the title, the tick labels left of both panels and under the rank axis.
TEST(SpectrumPlot, LabelsAreDrawn) {
  const cv::Mat plot = draw_spectrum_plot(decaying_spectra(), "a title");
  const SpectrumPlotAreas areas = spectrum_plot_areas(plot.size());
  EXPECT_GT(dark_pixels(plot, {0, 0, plot.cols, areas.values.y - 24}), 30) << "title";
  EXPECT_GT(dark_pixels(plot, {0, areas.values.y, areas.values.x - 6, areas.values.height}), 30) << "value ticks";
  EXPECT_GT(dark_pixels(plot, {0, areas.energy.y, areas.energy.x - 6, areas.energy.height}), 30) << "energy ticks";
  const int below = areas.energy.y + areas.energy.height + 8;
  EXPECT_GT(dark_pixels(plot, {0, below, plot.cols, plot.rows - below}), 30) << "rank ticks";
  // Without a title, the band above the panel labels stays blank.
  const cv::Mat untitled = draw_spectrum_plot(decaying_spectra(), "");
  EXPECT_EQ(dark_pixels(untitled, {0, 0, plot.cols, areas.values.y - 24}), 0);
}

TEST(SpectrumPlot, GreyImageAndNoValues) {
  const cv::Mat plot = draw_spectrum_plot({{5.0F, 3.0F, 1.0F}}, "grey");
  const SpectrumPlotAreas areas = spectrum_plot_areas(plot.size());
  EXPECT_EQ(channel_name(0, 1), "grey");
  EXPECT_GT(pixels_of_colour(plot, areas.values, channel_colour(0, 1)), 100);
  EXPECT_THROW(static_cast<void>(draw_spectrum_plot({}, "none")), std::invalid_argument);
  EXPECT_THROW(static_cast<void>(draw_spectrum_plot({{}, {}}, "none")), std::invalid_argument);
}

}  // namespace
}  // namespace svdserve::cli
