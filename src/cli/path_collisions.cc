// Whether two file arguments name one file: by device and inode, or by normalised path.
#include "cli/path_collisions.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <memory>

#include "io/errors.h"

namespace remat {
namespace cli {
namespace {

// What identifies the file at a path: device and inode when it exists, else the real path of
// its directory and its name (or the path as given when the directory cannot be resolved:
// writing there fails anyway).
struct FileIdentity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string normalised;

  bool operator==(const FileIdentity& o) const {
    if (exists != o.exists) return false;
    return exists ? device == o.device && inode == o.inode : normalised == o.normalised;
  }
};

FileIdentity identity_of(const std::string& path) {
  FileIdentity id;
  struct stat st {};
  if (stat(path.c_str(), &st) == 0) {
    id.exists = true;
    id.device = st.st_dev;
    id.inode = st.st_ino;
    return id;
  }
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  std::unique_ptr<char, decltype(&free)> real(realpath(dir.c_str(), nullptr), &free);
  id.normalised = real ? std::string(real.get()) + "/" + name : path;
  return id;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

void add_model_file(const std::string& model, std::vector<FileArgument>* files) {
  if (ends_with(model, ".rplan")) files->push_back({"the plan", model, false});
  if (ends_with(model, ".onnx")) files->push_back({"the model", model, false});
}

void refuse_colliding_files(const std::vector<FileArgument>& files) {
  std::vector<FileIdentity> ids;
  for (const FileArgument& f : files) ids.push_back(identity_of(f.path));
  for (size_t i = 0; i < files.size(); ++i) {
    for (size_t j = i + 1; j < files.size(); ++j) {
      const FileArgument& a = files[i];
      const FileArgument& b = files[j];
      if ((!a.written && !b.written) || !(ids[i] == ids[j])) continue;
      const std::string named =
          a.path == b.path ? "'" + a.path + "'" : "'" + a.path + "' and '" + b.path + "'";
      throw io::UsageError(a.what + " and " + b.what + " name the same file, " + named +
                           (a.written && b.written ? ": one would overwrite the other"
                                                   : ": writing it would replace the input"));
    }
  }
}

}  // namespace cli
}  // namespace remat
