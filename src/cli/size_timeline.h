// The `remat size --timeline` picture: arena bytes live at each op, one line per plan, as SVG.
#ifndef REMAT_CLI_SIZE_TIMELINE_H_
#define REMAT_CLI_SIZE_TIMELINE_H_

#include <string>
#include <vector>

#include "cli/sizing.h"

namespace remat {
namespace cli {

/// Width and height, in pixels, of the SVG for |series| plans (the legend grows with them).
void timeline_size(size_t series, int* out_width, int* out_height);

/// A self-contained SVG (no scripts, no external fonts) with one polyline per row of |rows|
/// that compiled: arena bytes live at each op index (SizeRow::live_bytes), axes labelled in
/// bytes and op indices, the forward pass shaded and a dashed line where each plan's backward
/// pass starts, and a legend naming strategy, batch, peak and arena. |title| names the model.
std::string timeline_svg(const std::string& title, const std::vector<SizeRow>& rows);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_SIZE_TIMELINE_H_
