# Sourced by the device benchmarks: points the Vulkan loader (which travels in the bundle) at
# the NVIDIA driver's ICD manifest, wherever the machine keeps it, and prints the GPU.
for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json \
           /etc/vulkan/icd.d/nvidia_icd.json; do
  if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; break; fi
done
echo "vulkan driver manifest: ${VK_DRIVER_FILES:-none found}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || true
