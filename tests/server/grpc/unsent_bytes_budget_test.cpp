#include "server/grpc/unsent_bytes_budget.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>
#include <thread>
#include <vector>

namespace svdserve {
namespace {

using namespace std::chrono_literals;
using Reservation = UnsentBytesBudget::Reservation;
using Ticket = UnsentBytesBudget::Ticket;

// What a waiting call got, once granted.
struct Granted {
  std::optional<Reservation> reservation;
  UnsentBytesBudget::Granted callback() {
    return [this](Reservation r) { reservation.emplace(std::move(r)); };
  }
};

Reservation now(std::variant<Reservation, Ticket> reserved) {
  EXPECT_TRUE(std::holds_alternative<Reservation>(reserved)) << "had to wait";
  return std::holds_alternative<Reservation>(reserved) ? std::get<Reservation>(std::move(reserved))
                                                       : Reservation{};
}

Ticket later(const std::variant<Reservation, Ticket>& reserved) {
  EXPECT_TRUE(std::holds_alternative<Ticket>(reserved)) << "did not wait";
  return std::holds_alternative<Ticket>(reserved) ? std::get<Ticket>(reserved) : 0;
}

TEST(UnsentBytesBudget, ReservesWhatFitsAndGivesItBackWhenSent) {
  UnsentBytesBudget budget(100);
  Granted unused;
  std::optional<Reservation> first = now(budget.reserve(60, unused.callback()));
  Reservation second = now(budget.reserve(40, unused.callback()));
  EXPECT_EQ(budget.sample().held_bytes, 100u);
  first.reset();
  EXPECT_EQ(budget.sample().held_bytes, 40u);
  Reservation moved = std::move(second);
  EXPECT_EQ(budget.sample().held_bytes, 40u) << "a move holds the same bytes";
  moved = Reservation{};
  EXPECT_EQ(budget.sample().held_bytes, 0u);
  EXPECT_FALSE(unused.reservation);
}

TEST(UnsentBytesBudget, ACallThatDoesNotFitWaitsInLineUntilBytesComeBack) {
  UnsentBytesBudget budget(100);
  Granted unused;
  std::optional<Reservation> held = now(budget.reserve(80, unused.callback()));
  Granted first;
  Granted second;
  (void)later(budget.reserve(30, first.callback()));
  (void)later(budget.reserve(10, second.callback()));
  EXPECT_FALSE(second.reservation) << "no overtaking: 10 bytes fit, but 30 are in line first";
  EXPECT_EQ(budget.sample().waiting_calls, 2u);
  held.reset();
  ASSERT_TRUE(first.reservation);
  ASSERT_TRUE(second.reservation);
  EXPECT_EQ(first.reservation->bytes(), 30u);
  const UnsentBytesSample sample = budget.sample();
  EXPECT_EQ(sample.held_bytes, 40u);
  EXPECT_EQ(sample.waiting_calls, 0u);
}

TEST(UnsentBytesBudget, AnAnswerLargerThanTheBudgetPassesOnlyWhenNothingIsHeld) {
  UnsentBytesBudget budget(100);
  Granted unused;
  std::optional<Reservation> small = now(budget.reserve(1, unused.callback()));
  Granted large;
  (void)later(budget.reserve(500, large.callback()));
  EXPECT_FALSE(large.reservation);
  small.reset();
  ASSERT_TRUE(large.reservation) << "alone, it passes: every call makes progress";
  EXPECT_EQ(budget.sample().held_bytes, 500u);
  Granted next;
  (void)later(budget.reserve(1, next.callback()));
  large.reservation.reset();
  EXPECT_TRUE(next.reservation);
}

TEST(UnsentBytesBudget, AWithdrawnCallLeavesTheLineAndLetsTheNextIn) {
  UnsentBytesBudget budget(100);
  Granted unused;
  Reservation held = now(budget.reserve(90, unused.callback()));
  Granted cancelled;
  Granted behind;
  const Ticket ticket = later(budget.reserve(50, cancelled.callback()));
  (void)later(budget.reserve(10, behind.callback()));
  EXPECT_TRUE(budget.withdraw(ticket));
  EXPECT_TRUE(behind.reservation) << "10 bytes fit once the 50 ahead of them left";
  EXPECT_FALSE(cancelled.reservation);
  EXPECT_FALSE(budget.withdraw(ticket)) << "gone already";
}

// A granted call that gives its bytes back at once (its job refused) lets the next in, and so on
// down a long line, without the calls nesting on the stack.
TEST(UnsentBytesBudget, GrantsThatGiveBackAtOnceRunOneAfterAnother) {
  UnsentBytesBudget budget(10);
  Granted unused;
  std::optional<Reservation> held = now(budget.reserve(10, unused.callback()));
  constexpr int kLine = 100'000;
  int granted = 0;
  for (int i = 0; i < kLine; ++i) {
    (void)later(budget.reserve(10, [&granted](Reservation) { ++granted; }));
  }
  held.reset();
  EXPECT_EQ(granted, kLine);
  EXPECT_EQ(budget.sample().held_bytes, 0u);
}

TEST(UnsentBytesBudget, WaitUntilWakesOnTheChange) {
  UnsentBytesBudget budget(100);
  Granted unused;
  std::optional<Reservation> held = now(budget.reserve(100, unused.callback()));
  std::jthread sender([&] { held.reset(); });
  EXPECT_TRUE(budget.wait_until([](const UnsentBytesSample& s) { return s.held_bytes == 0; }, 30s));
}

}  // namespace
}  // namespace svdserve
