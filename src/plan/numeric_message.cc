// Numeric error messages (plan/numeric_message.h): digits written by hand, so that a firmware
// image without formatted messages needs no printf either.
#include "plan/numeric_message.h"

namespace remat {
namespace {

// Appends |s| to |text| at |*used|, keeping room for the terminator.
void put(char* text, size_t capacity, size_t* used, const char* s) {
  for (; *s != '\0' && *used + 1 < capacity; ++s) text[(*used)++] = *s;
}

// Appends |bits| in decimal as a number of |kind|.
void put_number(char* text, size_t capacity, size_t* used, uint64_t bits, uint32_t kind) {
  const bool negative = kind == kMessageSigned && static_cast<int64_t>(bits) < 0;
  // The magnitude in unsigned arithmetic: INT64_MIN has no positive int64.
  uint64_t magnitude = negative ? 0 - bits : bits;
  char digits[22];  // 20 digits of 2^64 - 1, a sign and the terminator, filled from the end
  char* first = digits + sizeof digits;
  *--first = '\0';
  do {
    *--first = static_cast<char>('0' + magnitude % 10);
    magnitude /= 10;
  } while (magnitude != 0);
  if (negative) *--first = '-';
  put(text, capacity, used, first);
}

}  // namespace

void write_numbers_message(char* text, size_t capacity, remat_status status,
                           const MessageSite& site, const uint64_t* values, uint32_t kinds,
                           uint32_t count) {
  if (text == nullptr || capacity == 0) return;
  size_t used = 0;
  const char* file = site.file != nullptr ? site.file : "?";
  for (const char* p = file; *p != '\0'; ++p)
    if (*p == '/' || *p == '\\') file = p + 1;
  put(text, capacity, &used, "status ");
  put_number(text, capacity, &used, message_bits(status), kMessageSigned);
  put(text, capacity, &used, " at ");
  put(text, capacity, &used, file);
  put(text, capacity, &used, ":");
  put_number(text, capacity, &used, message_bits(site.line), kMessageSigned);
  uint32_t shown = 0;
  for (uint32_t i = 0; i < count && i < kMessageArguments && shown < 4; ++i) {
    const uint32_t kind = kinds >> (2 * i) & 3u;
    if (kind == kMessageNone) continue;
    put(text, capacity, &used, shown++ == 0 ? ": " : " ");
    put_number(text, capacity, &used, values[i], kind);
  }
  text[used] = '\0';
}

}  // namespace remat
