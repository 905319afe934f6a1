// Test helper: assert that code throws a given exception type whose message contains given parts.
//
// Unlike a bare try/catch, nothing thrown and a different exception type are failures too; unlike
// EXPECT_THROW, the message is checked: pass the meaningful parts (op name, rank, key, sizes), not
// a fragment as short as "2" that any message contains.
#pragma once

#include <exception>
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

// Runs fn(). Adds a failure unless it throws an Exc whose what() contains every string in
// `parts`; returns the message ("" when nothing or something else was thrown).
template <typename Exc, typename Fn>
std::string expectThrowsWith(Fn&& fn, std::initializer_list<std::string> parts = {}) {
  try {
    fn();
  } catch (const Exc& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos) << "message lacks '" << p << "': " << msg;
    }
    return msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw the wrong exception type: " << e.what();
    return "";
  } catch (...) {
    ADD_FAILURE() << "threw something that is not a std::exception";
    return "";
  }
  ADD_FAILURE() << "nothing was thrown";
  return "";
}

// True when `msg` contains `part`.
inline bool contains(const std::string& msg, const std::string& part) {
  return msg.find(part) != std::string::npos;
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
