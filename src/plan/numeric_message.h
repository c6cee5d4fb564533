// Error messages without their text, for firmware (meson -Dmessages, docs/firmware.md).
//
// With REMAT_MESSAGES 1 (every host build) an error's message is formatted printf-style, as
// set_error() and the op checks' Failure write it. With REMAT_MESSAGES 0 the format strings and
// the code that formats them are left out of the image: a message is then the status, the
// source line that failed and the integer arguments the format would have printed,
//   status 6 at plan_verify.cc:412: 12 3
// which, with the source of the same version, says what the formatted message would have said
// (or open the same plan on the host for the whole text).
#ifndef REMAT_PLAN_NUMERIC_MESSAGE_H_
#define REMAT_PLAN_NUMERIC_MESSAGE_H_

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "remat/remat.h"

#ifndef REMAT_MESSAGES
/// 1: errors carry formatted messages; 0: numeric messages (numeric_message.h).
#define REMAT_MESSAGES 1
#endif

namespace remat {

/// Where a message was raised: made from the format string a call passes, whose text it drops,
/// with the calling file and line (GCC's and Clang's __builtin_FILE/LINE as default arguments
/// are evaluated where the call is written).
struct MessageSite {
  /// Implicit, so that a call's format string argument becomes its site.
  MessageSite(const char* /*format*/, const char* file_name = __builtin_FILE(),
              int line_number = __builtin_LINE())
      : file(file_name), line(line_number) {}
  const char* file;  ///< The source file, as the compiler was given it.
  int line;          ///< The line of the call.
};

/// How write_numbers_message() reads an argument's 64 bits: 2 bits per argument in a kinds
/// word, argument i at bits 2i and 2i + 1.
enum MessageKind : uint32_t {
  kMessageNone = 0,      ///< not a number (a string, a real): left out of the message
  kMessageSigned = 1,    ///< a signed integer or enum
  kMessageUnsigned = 2,  ///< an unsigned integer or enum, or a bool
};

/// The most arguments a numeric message reads (16 kinds in 32 bits).
constexpr uint32_t kMessageArguments = 16;

/// Writes "status S at FILE:LINE: N N ..." into |text| (|capacity| bytes, always terminated
/// when |capacity| > 0): FILE without its folders, then the first four numbers among the
/// |count| |values| (|kinds| says which are numbers), whole, in decimal.
void write_numbers_message(char* text, size_t capacity, remat_status status,
                           const MessageSite& site, const uint64_t* values, uint32_t kinds,
                           uint32_t count);

/// The MessageKind of an argument of type T.
template <typename T>
constexpr uint32_t message_kind() {
  if constexpr (std::is_enum<T>::value) {
    return message_kind<std::underlying_type_t<T>>();
  } else if constexpr (std::is_integral<T>::value) {
    return std::is_signed<T>::value ? kMessageSigned : kMessageUnsigned;
  } else {
    return kMessageNone;
  }
}

/// An argument's 64 bits (a signed one sign-extended), or 0 for one that is not a number.
template <typename T>
constexpr uint64_t message_bits(const T& value) {
  if constexpr (std::is_enum<T>::value) {
    return message_bits(static_cast<std::underlying_type_t<T>>(value));
  } else if constexpr (std::is_integral<T>::value && std::is_signed<T>::value) {
    return static_cast<uint64_t>(static_cast<int64_t>(value));
  } else if constexpr (std::is_integral<T>::value) {
    return static_cast<uint64_t>(value);
  } else {
    return 0;
  }
}

/// As write_numbers_message(), the values being |args|; their kinds are constants.
template <typename... Args>
inline void write_numeric_message(char* text, size_t capacity, remat_status status,
                                  const MessageSite& site, const Args&... args) {
  static_assert(sizeof...(Args) <= kMessageArguments, "a numeric message reads 16 arguments");
  const uint64_t values[sizeof...(Args) + 1] = {message_bits(args)..., 0};
  uint32_t kinds = 0, shift = 0;
  ((kinds |= message_kind<Args>() << shift, shift += 2), ...);
  write_numbers_message(text, capacity, status, site, values, kinds, sizeof...(Args));
}

}  // namespace remat

#endif  // REMAT_PLAN_NUMERIC_MESSAGE_H_
