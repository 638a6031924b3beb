// One CUDA device as the backend sees it: making it current on the calling thread, its PCI bus id,
// and the line the start-up table shows (name, memory, PCI bus id, CUDA runtime and driver, cuDNN
// and NCCL versions). Only compiled in the cuda build.
#pragma once
#include <string>

namespace scaletrain::cuda {

// Makes `device` current on the calling thread (the CUDA device is per host thread: the loader's
// reader thread and the host-function threads of the runtime start on device 0).
void use_device(int device);

// Devices this process sees (0 when there is none or no driver); other failures throw.
int visible_device_count();

// "0000:1b:00.0"
std::string pci_bus_id(int device);

// "NVIDIA H100 80GB HBM3"
std::string device_name(int device);
// Its streaming multiprocessors (cudaDevAttrMultiProcessorCount).
int multiprocessor_count(int device);

// "CUDA runtime 13.0 / driver 13.0, cuDNN 9.19.0, NCCL 2.28.9, cuBLAS 13.1.0" (driver "none" without one); none of
// these calls needs a device.
std::string library_versions();

// "cuda 0 (NVIDIA H100 80GB HBM3, 79.2 GiB, PCI 0000:1b:00.0, CUDA runtime 13.0 / driver 13.0,
// cuDNN 9.19.0, NCCL 2.28.9)"
std::string describe_device(int device);

}  // namespace scaletrain::cuda
