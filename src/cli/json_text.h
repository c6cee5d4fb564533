// JSON text the commands print (inspect --json, size --json): strings quoted and escaped.
#ifndef REMAT_CLI_JSON_TEXT_H_
#define REMAT_CLI_JSON_TEXT_H_

#include <string>

namespace remat {
namespace cli {

/// |text| as a JSON string literal: quoted, with '"', '\\' and control characters escaped
/// (\uXXXX); well-formed UTF-8 passes through, and each byte that is not part of it becomes
/// \ufffd (the replacement character), so the output is valid JSON whatever |text| holds (a
/// hand-made plan's tensor names).
std::string json_string(const std::string& text);

/// As above; a null |text| is the empty string.
std::string json_string(const char* text);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_JSON_TEXT_H_
