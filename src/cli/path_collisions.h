// Two file arguments of one command that name the same file: refused before any work, since
// writing one would replace the other (a state overwritten by the parameters, a data file by
// the state).
#ifndef REMAT_CLI_PATH_COLLISIONS_H_
#define REMAT_CLI_PATH_COLLISIONS_H_

#include <string>
#include <vector>

namespace remat {
namespace cli {

/// A file a command reads or writes: |what| names the argument in messages ("--state",
/// "the plan"), |path| is as given, |written| says whether the command writes it.
struct FileArgument {
  std::string what;
  std::string path;
  bool written;
};

/// Appends |model| (a command's MODEL argument) to |files| as an input when it names a file:
/// FILE.rplan as "the plan", FILE.onnx as "the model"; a template names none.
void add_model_file(const std::string& model, std::vector<FileArgument>* files);

/// Throws UsageError naming both arguments and the path(s) when two of |files|, at least one of
/// them written, name the same file. The same file is the same device and inode (after
/// symbolic links) where both exist, the same real path of the directory and the same name
/// where neither does; so two names of one file (a hard or symbolic link) collide too. Two
/// files that are only read may be the same.
void refuse_colliding_files(const std::vector<FileArgument>& files);

}  // namespace cli
}  // namespace remat

#endif  // REMAT_CLI_PATH_COLLISIONS_H_
