// JSON text the commands print (inspect --json, size --json): strings quoted and escaped.
#ifndef REMAT_CLI_JSON_TEXT_H_
#define REMAT_CLI_JSON_TEXT_H_

#include <string>

namespace remat {
namespace cli {

/// |text| as a JSON string literal: quoted, with '"', '\\' and control characters escaped
/// (\uXXXX); bytes from 0x80 pass through, so UTF-8 stays UTF-8.
std::string json_string(const std::string& text);

/// As above; a null |text| is the empty string.
std::string json_string(const char* text);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_JSON_TEXT_H_
