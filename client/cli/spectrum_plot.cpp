#include "client/cli/spectrum_plot.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <opencv2/imgproc.hpp>

#include "client/text_format.hpp"

namespace svdserve::cli {
namespace {

constexpr int kFont = cv::FONT_HERSHEY_SIMPLEX;
constexpr double kLabelScale = 0.45;
constexpr double kTitleScale = 0.6;
constexpr int kLeftMarginPx = 72;
constexpr int kRightMarginPx = 24;
constexpr int kTopMarginPx = 56;
constexpr int kPanelGapPx = 40;
constexpr int kBottomMarginPx = 52;
constexpr double kValuesPanelShare = 0.55;
constexpr int kMaxRankTicks = 10;
constexpr int kMaxDecades = 12;        // Values further below the largest are drawn at the bottom.
constexpr int kEnergyNinesShown = 4;   // The energy axis ends at 99.99%.
constexpr int kTickPx = 5;
const cv::Scalar kBackground{255, 255, 255};
const cv::Scalar kInk{30, 30, 30};
const cv::Scalar kGrid{225, 225, 225};
const cv::Scalar kMarkerColour{110, 110, 110};

void put_text(cv::Mat& plot, const std::string& text, cv::Point origin, double scale = kLabelScale) {
  cv::putText(plot, text, origin, kFont, scale, kInk, 1, cv::LINE_AA);
}

[[nodiscard]] cv::Size text_size(const std::string& text, double scale = kLabelScale) {
  int baseline = 0;
  return cv::getTextSize(text, kFont, scale, 1, &baseline);
}

// Rank 1..max_rank across the area's width.
[[nodiscard]] int rank_x(const cv::Rect& area, std::size_t rank, std::size_t max_rank) {
  if (max_rank <= 1) return area.x + area.width / 2;
  return area.x + static_cast<int>(std::lround(static_cast<double>(rank - 1) / static_cast<double>(max_rank - 1) *
                                               (area.width - 1)));
}

// value in [low, high] from the area's bottom to its top.
[[nodiscard]] int scaled_y(const cv::Rect& area, double value, double low, double high) {
  const double share = std::clamp((value - low) / (high - low), 0.0, 1.0);
  return area.y + area.height - 1 - static_cast<int>(std::lround(share * (area.height - 1)));
}

// 1, 2 or 5 times a power of ten, giving at most kMaxRankTicks ticks.
[[nodiscard]] std::size_t rank_tick_step(std::size_t max_rank) {
  for (std::size_t power = 1;; power *= 10) {
    for (const std::size_t mantissa : {1, 2, 5}) {
      if (max_rank / (mantissa * power) < kMaxRankTicks) return mantissa * power;
    }
  }
}

[[nodiscard]] std::string power_of_ten_text(int exponent) {
  if (exponent >= 0 && exponent <= 4) return std::to_string(static_cast<long>(std::lround(std::pow(10.0, exponent))));
  return "1e" + std::to_string(exponent);
}

[[nodiscard]] std::string nines_tick_text(int nines) {
  if (nines == 0) return "0%";
  return fixed_text(100.0 * (1.0 - std::pow(10.0, -nines)), std::max(0, nines - 2)) + "%";
}

// -log10(1 - energy): 1 at 90%, 2 at 99%; capped at the top of the axis.
[[nodiscard]] double energy_nines(double energy) {
  const double missing = 1.0 - energy;
  if (missing <= std::pow(10.0, -kEnergyNinesShown)) return kEnergyNinesShown;
  return -std::log10(missing);
}

void draw_frame(cv::Mat& plot, const cv::Rect& area) { cv::rectangle(plot, area, kInk, 1); }

void draw_rank_axis(cv::Mat& plot, const SpectrumPlotAreas& areas, std::size_t max_rank) {
  const std::size_t step = rank_tick_step(max_rank);
  std::vector<std::size_t> ticks{1};
  for (std::size_t rank = step; rank <= max_rank; rank += step) {
    if (rank != 1) ticks.push_back(rank);
  }
  for (const std::size_t rank : ticks) {
    for (const cv::Rect& area : {areas.values, areas.energy}) {
      const int x = rank_x(area, rank, max_rank);
      cv::line(plot, {x, area.y + area.height - 1}, {x, area.y + area.height - 1 + kTickPx}, kInk, 1);
    }
    const std::string label = std::to_string(rank);
    const int x = rank_x(areas.energy, rank, max_rank);
    put_text(plot, label, {x - text_size(label).width / 2, areas.energy.y + areas.energy.height + 22});
  }
  const std::string axis_name = "rank k";
  put_text(plot, axis_name,
           {areas.energy.x + areas.energy.width / 2 - text_size(axis_name).width / 2,
            areas.energy.y + areas.energy.height + 44});
}

void draw_y_tick(cv::Mat& plot, const cv::Rect& area, int y, const std::string& label) {
  cv::line(plot, {area.x + 1, y}, {area.x + area.width - 2, y}, kGrid, 1);
  cv::line(plot, {area.x - kTickPx, y}, {area.x, y}, kInk, 1);
  const cv::Size size = text_size(label);
  put_text(plot, label, {area.x - kTickPx - 4 - size.width, y + size.height / 2});
}

void draw_values_panel(cv::Mat& plot, const cv::Rect& area, const ChannelSpectra& spectra, std::size_t max_rank) {
  float largest = 0.0F;
  float smallest_positive = 0.0F;
  for (const auto& spectrum : spectra) {
    for (const float value : spectrum) {
      largest = std::max(largest, value);
      if (value > 0.0F && (smallest_positive == 0.0F || value < smallest_positive)) smallest_positive = value;
    }
  }
  if (largest <= 0.0F) largest = smallest_positive = 1.0F;  // All zeros: one flat line at the bottom.
  const int high = static_cast<int>(std::ceil(std::log10(largest)));
  int low = std::max(static_cast<int>(std::floor(std::log10(smallest_positive))), high - kMaxDecades);
  if (low == high) --low;

  const int decade_step = std::max(1, (high - low + 5) / 6);
  for (int exponent = high; exponent >= low; exponent -= decade_step) {
    draw_y_tick(plot, area, scaled_y(area, exponent, low, high), power_of_ten_text(exponent));
  }
  for (std::size_t c = 0; c < spectra.size(); ++c) {
    std::vector<cv::Point> curve;
    for (std::size_t i = 0; i < spectra[c].size(); ++i) {
      const double value = spectra[c][i] > 0.0F ? std::log10(spectra[c][i]) : low;
      curve.emplace_back(rank_x(area, i + 1, max_rank), scaled_y(area, value, low, high));
    }
    cv::polylines(plot, curve, false, channel_colour(c, spectra.size()), 2, cv::LINE_AA);
  }

  // Legend, top right: a short line of each channel's colour and its name.
  constexpr int kLegendLinePx = 24;
  constexpr int kLegendRowPx = 20;
  int legend_width = 0;
  for (std::size_t c = 0; c < spectra.size(); ++c) {
    legend_width = std::max(legend_width, text_size(channel_name(c, spectra.size())).width);
  }
  legend_width += kLegendLinePx + 24;
  const cv::Rect legend(area.x + area.width - legend_width - 10, area.y + 10, legend_width,
                        static_cast<int>(spectra.size()) * kLegendRowPx + 8);
  cv::rectangle(plot, legend, kBackground, cv::FILLED);
  cv::rectangle(plot, legend, kMarkerColour, 1);
  for (std::size_t c = 0; c < spectra.size(); ++c) {
    const int y = legend.y + 14 + static_cast<int>(c) * kLegendRowPx;
    cv::line(plot, {legend.x + 8, y}, {legend.x + 8 + kLegendLinePx, y}, channel_colour(c, spectra.size()), 2,
             cv::LINE_AA);
    put_text(plot, channel_name(c, spectra.size()), {legend.x + 16 + kLegendLinePx, y + 5});
  }
  put_text(plot, "singular value (log scale)", {area.x, area.y - 8});
}

void draw_energy_panel(cv::Mat& plot, const SpectrumPlotAreas& areas, const std::vector<double>& cumulative) {
  const cv::Rect& area = areas.energy;
  for (int nines = 0; nines <= kEnergyNinesShown; ++nines) {
    draw_y_tick(plot, area, scaled_y(area, nines, 0, kEnergyNinesShown), nines_tick_text(nines));
  }
  const std::size_t max_rank = cumulative.size();
  // The marked ranks: a line through both panels, labelled in the energy panel one row apart.
  for (std::size_t m = 0; m < kMarkedEnergyFractions.size(); ++m) {
    const double fraction = kMarkedEnergyFractions[m];
    const std::uint32_t rank = rank_for_energy(cumulative, fraction);
    for (const cv::Rect& panel : {areas.values, areas.energy}) {
      const int x = rank_x(panel, rank, max_rank);
      cv::line(plot, {x, panel.y + 1}, {x, panel.y + panel.height - 2}, kMarkerColour, 1);
    }
    const std::string label = energy_percent_text(fraction) + ": k = " + std::to_string(rank);
    const cv::Size size = text_size(label);
    const int x = rank_x(area, rank, max_rank);
    const int label_x = x + 6 + size.width < area.x + area.width ? x + 6 : x - 6 - size.width;
    const int label_y = area.y + area.height - 12 - static_cast<int>(m) * 20;
    cv::rectangle(plot, {label_x - 2, label_y - size.height - 3, size.width + 4, size.height + 7}, kBackground,
                  cv::FILLED);
    put_text(plot, label, {label_x, label_y});
  }
  std::vector<cv::Point> curve;
  for (std::size_t i = 0; i < cumulative.size(); ++i) {
    curve.emplace_back(rank_x(area, i + 1, max_rank),
                       scaled_y(area, energy_nines(cumulative[i]), 0, kEnergyNinesShown));
  }
  cv::polylines(plot, curve, false, kEnergyCurveColour, 2, cv::LINE_AA);
  put_text(plot, "cumulative energy (sum of squared singular values, share of the total)", {area.x, area.y - 8});
}

}  // namespace

cv::Scalar channel_colour(std::size_t channel, std::size_t channels) noexcept {
  static const std::array<cv::Scalar, 4> kColour = {cv::Scalar{200, 90, 20}, cv::Scalar{40, 150, 40},
                                                    cv::Scalar{40, 40, 210}, cv::Scalar{170, 60, 150}};
  const cv::Scalar grey{80, 80, 80};
  if (channels <= 2) return channel == 0 ? grey : kColour[3];
  return kColour[std::min<std::size_t>(channel, 3)];
}

std::string channel_name(std::size_t channel, std::size_t channels) {
  static const std::array<std::string, 4> kName = {"blue", "green", "red", "alpha"};
  if (channels <= 2) return channel == 0 ? "grey" : "alpha";
  return channel < kName.size() ? kName[channel] : "channel " + std::to_string(channel);
}

SpectrumPlotAreas spectrum_plot_areas(cv::Size size) {
  const int width = size.width - kLeftMarginPx - kRightMarginPx;
  const int panels_height = size.height - kTopMarginPx - kPanelGapPx - kBottomMarginPx;
  const int values_height = static_cast<int>(panels_height * kValuesPanelShare);
  return {.values = {kLeftMarginPx, kTopMarginPx, width, values_height},
          .energy = {kLeftMarginPx, kTopMarginPx + values_height + kPanelGapPx, width,
                     panels_height - values_height}};
}

cv::Mat draw_spectrum_plot(const ChannelSpectra& spectra, const std::string& title, cv::Size size) {
  const std::vector<double> cumulative = cumulative_energy(spectra);
  if (cumulative.empty()) throw std::invalid_argument("no singular values to plot");
  cv::Mat plot(size, CV_8UC3, kBackground);
  const SpectrumPlotAreas areas = spectrum_plot_areas(size);
  put_text(plot, title, {kLeftMarginPx, 24}, kTitleScale);
  draw_values_panel(plot, areas.values, spectra, cumulative.size());
  draw_energy_panel(plot, areas, cumulative);
  draw_rank_axis(plot, areas, cumulative.size());
  draw_frame(plot, areas.values);
  draw_frame(plot, areas.energy);
  return plot;
}

}  // namespace svdserve::cli
