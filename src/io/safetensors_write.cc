// Writes safetensors files atomically (io/atomic_file.h), tensor by tensor. Apart from
// safetensors.cc so that code which only reads them need not link the file writer.
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "io/safetensors.h"
#include "io/safetensors_json.h"

namespace remat {

bool write_safetensors(const std::string& path, const SafeTensorsFile& file, std::string* error) {
  std::string header;
  std::vector<const SafeTensor*> order;
  if (!safetensors_internal::encode_header(file, &header, &order, error)) {
    *error = path + ": " + *error;
    return false;
  }
  // Tensor by tensor from the caller's buffers: the file is never held twice in memory.
  io::AtomicFileWriter writer;
  bool ok = writer.open(path) && writer.write(header.data(), header.size());
  for (size_t i = 0; ok && i < order.size(); ++i)
    ok = writer.write(order[i]->data.data(), order[i]->data.size());
  if (ok && writer.commit()) return true;
  *error = writer.error();
  return false;
}

}  // namespace remat
