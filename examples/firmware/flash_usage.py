"""Flash and RAM of the firmware image by origin, from the linker's map file: remat's runtime
and CPU backend (its archives), the plan, the C library and libgcc (newlib-nano, soft double
and float helpers), and the example's own code.

Usage: python3 flash_usage.py remat_firmware.map
Prints one line per origin, the runtime's largest objects, and, last, `runtime text+data: N bytes` (remat's archives' code,
constants and initialised data as linked, after --gc-sections dropped what nothing calls).
"""
import re
import sys

# An input section line: " .text.name  0xADDRESS  0xSIZE  object" (the name may sit alone on
# the line before when it is long).
SECTION = re.compile(r"^ (\.[\w.$]+)?\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$")


def origin(obj):
    if "libremat_" in obj:
        return "remat runtime + CPU backend"
    if "libc_nano" in obj or "libm" in obj or "libnosys" in obj:
        return "C library (newlib-nano, libm)"
    if "libgcc" in obj:
        return "libgcc (soft double, division)"
    if "main.c" in obj:
        return "example (main.c, with the plan)"
    return "example (startup, semihosting, syscalls)"


def main():
    sizes = {}
    objects = {}
    pending = None
    in_memory_map = False
    for line in open(sys.argv[1]):
        if line.startswith("Linker script and memory map"):
            in_memory_map = True
            continue
        if not in_memory_map:
            continue
        name_only = re.match(r"^ (\.[\w.$]+)\s*$", line)
        if name_only:
            pending = name_only.group(1)
            continue
        m = SECTION.match(line)
        if not m:
            pending = None
            continue
        name = m.group(1) or pending
        pending = None
        if name is None or int(m.group(2), 16) == 0:
            continue
        size = int(m.group(3), 16)
        if name.startswith((".bss", "COMMON")):
            kind = "bss"
        elif name.startswith(".data"):
            kind = "data"
        elif name.startswith((".text", ".rodata", ".ARM.exidx", ".init_array", ".vectors")):
            kind = "text"
        else:  # debug information, comments, attributes: not in the image
            continue
        key = origin(m.group(4))
        sizes.setdefault(key, {"text": 0, "data": 0, "bss": 0})[kind] += size
        if key.startswith("remat") and kind == "text":
            obj = re.sub(r".*\(|\.o\)$|\.cc$", "", m.group(4).split("/")[-1])
            objects[obj] = objects.get(obj, 0) + size
    for key in sorted(sizes):
        s = sizes[key]
        print("%-44s text %7d  data %5d  bss %7d" % (key, s["text"], s["data"], s["bss"]))
    largest = sorted(objects.items(), key=lambda kv: -kv[1])[:8]
    print("largest runtime objects (text): " + ", ".join("%s %d" % kv for kv in largest))
    runtime = sizes.get("remat runtime + CPU backend", {"text": 0, "data": 0})
    print("runtime text+data: %d bytes" % (runtime["text"] + runtime["data"]))


if __name__ == "__main__":
    main()
