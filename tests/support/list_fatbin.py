#!/usr/bin/env python3
"""Lists the CUDA images in the fat binaries embedded in an ELF file (its .nv_fatbin sections), one
line each, like `cuobjdump --list-elf --list-ptx`: "ELF sm_80", "PTX compute_80". For toolkits that
ship nvcc without cuobjdump (the pip-wheel CUDA 13 here). Fatbin layout: a container header (magic
0xBA55ED50, u16 version, u16 header size, u64 payload size), then entries (u16 kind: 1 PTX, 2 ELF;
u16; u32 header size; u64 payload size; u32; u32; u16 minor; u16 major; u32 arch; ...)."""
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50


def sections(data):
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit("not a little-endian 64-bit ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_off = headers[shstrndx][4]
    for h in headers:
        name = data[names_off + h[0]:data.index(b"\0", names_off + h[0])].decode()
        yield name, h[4], h[5]  # name, file offset, size


def images(blob):
    pos = 0
    while pos + 16 <= len(blob):
        magic, _version, header_size, size = struct.unpack_from("<IHHQ", blob, pos)
        if magic != FATBIN_MAGIC:
            pos += 8  # containers are 8-byte aligned; skip padding
            continue
        entry, end = pos + header_size, pos + header_size + size
        while entry + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", blob, entry)
            arch, = struct.unpack_from("<I", blob, entry + 28)
            yield ("ELF", "sm_%d" % arch) if kind == 2 else ("PTX", "compute_%d" % arch)
            if entry_header == 0:
                break
            entry += entry_header + payload
        pos = end


def main():
    data = open(sys.argv[1], "rb").read()
    found = 0
    for name, offset, size in sections(data):
        if name == ".nv_fatbin":
            for kind, arch in images(data[offset:offset + size]):
                found += 1
                print("%s %s" % (kind, arch))
    if not found:
        sys.exit("%s: no CUDA images in a .nv_fatbin section" % sys.argv[1])


if __name__ == "__main__":
    main()
