// English texts of "Explain this error". Per-code texts are generated from crates/gpurent-core/data/error-rules.csv (title, meaning, cause, fix).
/** @type {Record<string, string>} */
export default {
  'explain.title': 'Explain an error',
  'explain.intro':
    'Paste an error or a whole log; gpurent says what it means, shows the lines, the likely cause and the fix. With a saved host, its last Setup check makes the answer specific to that machine.',
  'explain.paste': 'Log or error text',
  'explain.host': 'Host (optional)',
  'explain.host.none': 'No host',
  'explain.run': 'Explain',
  'explain.button': 'Explain',
  'explain.running': 'Reading the log…',
  'explain.none': 'Not recognised (lines read: {lines}). The lines that look most like the error:',
  'explain.none.empty': 'Not recognised (lines read: {lines}), and no line looks like an error.',
  'explain.environment': 'Environment report (for a bug report; credentials removed)',
  'explain.confidence.high': 'high confidence',
  'explain.confidence.medium': 'medium confidence',
  'explain.evidence': 'Lines that show it',
  'explain.line': 'line {line}',
  'explain.cause': 'Likely cause',
  'explain.fix': 'Fix',
  'explain.commands': 'Commands',
  'explain.consequence': 'Most likely a consequence of {code} (above).',
  'explain.needs': 'Pick a host that Setup has checked and gpurent would also look at: {facts}.',
  'explain.noprobe': 'This host has no Setup check yet: run "Check this machine" so the answer can use its facts.',
  'explain.runfix': 'Run this fix (Setup)',
  'explain.unverified': 'This rule is not verified against a cited source.',
  'explain.sources': 'Sources: {sources}',
  'explain.remote.log': "The host's log (or the error's detail):",
  'explain.auto': "gpurent read the failed launch's log:",
  'explain.cause.arch_missing': 'This is an {gpu} ({sm}); the installed torch {torch} has kernels up to {max}.',
  'explain.cause.arch_missing_has_it':
    'This is an {gpu} ({sm}); the probed torch {torch} has kernels for it, so the failing process used another environment or a CUDA extension built without them.',
  'explain.cause.driver_too_old':
    'The driver {driver} runs CUDA up to {driver_cuda}; the program needs CUDA {needs} (driver {min_driver} or newer).',
  'explain.cause.driver_too_old_container':
    'The driver {driver} runs CUDA up to {driver_cuda}; the program needs CUDA {needs} (driver {min_driver} or newer). In a container the driver belongs to the host machine: rent another one.',
  'explain.cause.shm_size': "/dev/shm on this host is {mib} MiB (Docker's default is 64 MB).",
  'explain.cause.gpu_memory': 'The {gpu} has {total} MiB; other processes held {others} MiB when probed.',
  'explain.cause.host_memory': 'This machine has {total} MiB of RAM ({free} MiB free when probed).',
  'explain.cause.disk_free': '{path} had {free} MiB free of {total} MiB when probed.',
  'explain.cause.torch_cpu': 'The probed torch {torch} is a CPU build.',
  'explain.cause.torch_cuda':
    'The probed torch {torch} is a CUDA {cuda} build: the failing program runs another environment.',
  'explain.cause.gpus_visible': 'The probe saw {count} GPU(s) (nvidia-smi: {state}).',
  'explain.cause.driver_state': 'nvidia-smi: {state}; driver {driver}, loaded kernel module {module}.',
  'explain.cause.listens_on': 'The app listens on {address}:{port}.',
  'error.explain_log_unreadable': 'The log file could not be read.',
  'error.explain_probe_unreadable': "The host's saved Setup check could not be read; run the check again.",
  'explain.code.cuda_out_of_memory.title': 'CUDA out of memory',
  'explain.code.cuda_out_of_memory.meaning': 'The GPU ran out of memory (VRAM) for this model/batch.',
  'explain.code.cuda_out_of_memory.cause':
    'The model, batch or resolution is too large for this GPU; allocator fragmentation; or another process holds GPU memory.',
  'explain.code.cuda_out_of_memory.fix':
    'Use a smaller batch or resolution; offload or quantize the model; set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; check nvidia-smi for other processes holding memory.',
  'explain.code.torch_cpu_build.title': 'PyTorch is a CPU-only build',
  'explain.code.torch_cpu_build.meaning': 'The installed PyTorch has no CUDA support, so it cannot use the GPU.',
  'explain.code.torch_cpu_build.cause':
    'A CPU wheel got installed, often by a custom node, a requirements.txt or an app upgrade.',
  'explain.code.torch_cpu_build.fix':
    "Reinstall a CUDA build of torch with the environment's own python, from the exact download.pytorch.org/whl/cuXXX index for this driver.",
  'explain.code.driver_not_reachable.title': 'The NVIDIA driver is not loaded',
  'explain.code.driver_not_reachable.meaning': 'Nothing on this machine can talk to the NVIDIA driver.',
  'explain.code.driver_not_reachable.cause':
    'The kernel was updated without DKMS, nouveau took the GPU, or Secure Boot blocks the module; inside a rented container it is a fault of the host machine.',
  'explain.code.driver_not_reachable.fix':
    'Reinstall or rebuild the driver module (dkms), blacklist nouveau and reboot; on a rented container, recreate the instance.',
  'explain.code.nvml_version_mismatch.title': 'NVIDIA driver and library versions differ',
  'explain.code.nvml_version_mismatch.meaning':
    'The user-space NVIDIA library and the loaded kernel module are different versions.',
  'explain.code.nvml_version_mismatch.cause':
    'The driver was upgraded (often by unattended-upgrades) while the old kernel module is still loaded.',
  'explain.code.nvml_version_mismatch.fix':
    'Reboot (or unload and reload the nvidia modules); then hold the driver packages so they do not upgrade unattended.',
  'explain.code.arch_not_supported.title': 'No GPU kernels for this GPU architecture',
  'explain.code.arch_not_supported.meaning':
    "The installed PyTorch (or a CUDA extension) contains no kernels for this GPU's architecture.",
  'explain.code.arch_not_supported.cause':
    'The wheel or an extension lacks kernels for this GPU (Blackwell sm_100/sm_120 needs cu128 or newer builds).',
  'explain.code.arch_not_supported.fix':
    "Install a torch build whose arch list includes this GPU (cu128+ for Blackwell), then rebuild or reinstall CUDA extensions (flash-attn, xformers, kornia); compare torch.cuda.get_arch_list() with the device's compute capability.",
  'explain.code.driver_too_old.title': 'The NVIDIA driver is too old for this CUDA',
  'explain.code.driver_too_old.meaning':
    "The program (or container image) was built for a newer CUDA than this machine's driver supports.",
  'explain.code.driver_too_old.cause': 'The image or wheel was built for a newer CUDA than the host driver supports.',
  'explain.code.driver_too_old.fix':
    'Rent a host with a new enough driver (RunPod allowedCudaVersions / --min-cuda-version; Vast @vastai-automatic-tag), upgrade the driver on a VM you control, or install an older cuXXX wheel. Minimum drivers: CUDA 11.x >= 450, 12.x >= 525, 13.x >= 580.',
  'explain.code.nccl_shm.title': 'Shared memory (/dev/shm) too small',
  'explain.code.nccl_shm.meaning': 'NCCL or the DataLoader workers could not allocate shared memory in /dev/shm.',
  'explain.code.nccl_shm.cause':
    "Docker's default /dev/shm is 64 MB, too small for NCCL buffers between GPUs or DataLoader workers.",
  'explain.code.nccl_shm.fix':
    'Start the container with a bigger /dev/shm (--shm-size=16g) or --ipc=host; as a workaround NCCL_SHM_DISABLE=1 (slower); NCCL_DEBUG=INFO shows the failing call.',
  'explain.code.nccl_p2p.title': 'GPU peer-to-peer (P2P) failed',
  'explain.code.nccl_p2p.meaning': 'NCCL could not copy directly between GPUs (peer-to-peer).',
  'explain.code.nccl_p2p.cause':
    'P2P is unsupported or broken between these GPUs (consumer cards, VMs, some PCIe topologies).',
  'explain.code.nccl_p2p.fix':
    'Set NCCL_P2P_DISABLE=1 (together with a larger /dev/shm) and run again; NCCL_DEBUG=INFO shows the transport.',
  'explain.code.nccl_timeout.title': 'NCCL collective timed out',
  'explain.code.nccl_timeout.meaning':
    'One rank waited too long for the others in a collective (all-reduce, broadcast...).',
  'explain.code.nccl_timeout.cause':
    "One rank stalled or died: data loading, work done only on rank 0, a hang, or an error on another rank (check the other ranks' logs first).",
  'explain.code.nccl_timeout.fix':
    "Find the stalled rank (NCCL_DEBUG=INFO, each rank's log); fix its error; for long rank-0-only steps raise the timeout (init_process_group(timeout=...)).",
  'explain.code.cudnn_missing.title': 'cuDNN library not found',
  'explain.code.cudnn_missing.meaning': 'A program could not load the cuDNN library it was built against.',
  'explain.code.cudnn_missing.cause':
    'CTranslate2/faster-whisper expects cuDNN 8 while torch or the system has 9, or the pip nvidia-* libraries are not on LD_LIBRARY_PATH.',
  'explain.code.cudnn_missing.fix':
    'Install the cuDNN the program expects (apt install libcudnn8 / conda install cudnn), or put the pip nvidia cublas and cudnn lib folders on LD_LIBRARY_PATH.',
  'explain.code.bitsandbytes_setup.title': 'bitsandbytes could not set up CUDA',
  'explain.code.bitsandbytes_setup.meaning': 'bitsandbytes found no usable CUDA library for its GPU code.',
  'explain.code.bitsandbytes_setup.cause': 'An old bitsandbytes, libcudart not found, or a stale BNB_CUDA_VERSION.',
  'explain.code.bitsandbytes_setup.fix':
    'Upgrade bitsandbytes; run python -m bitsandbytes for its report; unset BNB_CUDA_VERSION.',
  'explain.code.flash_attn_build.title': 'A CUDA extension (flash-attn) failed to build',
  'explain.code.flash_attn_build.meaning':
    'pip tried to compile a CUDA extension (flash-attn) from source, and the build failed.',
  'explain.code.flash_attn_build.cause':
    'A runtime (non-devel) image without nvcc, CUDA_HOME unset, or a slow or out-of-memory compile.',
  'explain.code.flash_attn_build.fix':
    'Use pip install flash-attn --no-build-isolation (it downloads a prebuilt wheel when torch and CUDA match); otherwise use a devel image with nvcc, install ninja and limit MAX_JOBS.',
  'explain.code.no_matching_wheel.title': 'No matching wheel for this Python/platform',
  'explain.code.no_matching_wheel.meaning':
    'pip found no package file for the requested version on this Python and platform.',
  'explain.code.no_matching_wheel.cause':
    'No wheel for this Python version (e.g. 3.13 for an old torch), cuXXX builds looked up on PyPI instead of their /whl/cuXXX index, or macOS.',
  'explain.code.no_matching_wheel.fix':
    'Use Python 3.10-3.12 and the exact https://download.pytorch.org/whl/cuXXX index from pytorch.org.',
  'explain.code.disk_full.title': 'Disk full',
  'explain.code.disk_full.meaning': "A write failed because the disk (or the user's quota) is full.",
  'explain.code.disk_full.cause':
    "The root/container disk is small and pip's cache, TMPDIR or model downloads filled it (a torch CUDA install alone is several GB).",
  'explain.code.disk_full.fix':
    'Free space (pip cache purge), install with --no-cache-dir, point TMPDIR and caches (HF_HOME) at the data disk, or use a bigger disk.',
  'explain.code.device_side_assert.title': 'CUDA device-side assert',
  'explain.code.device_side_assert.meaning':
    "A GPU kernel's own check failed, most often an index out of range (a label >= the number of classes, a token id >= the vocabulary).",
  'explain.code.device_side_assert.cause':
    'Bad data reached a kernel: class labels outside [0, num_classes), token ids beyond the embedding size, or a wrong tensor shape. The Python line in the traceback is often not the real one.',
  'explain.code.device_side_assert.fix':
    "Run once with CUDA_LAUNCH_BLOCKING=1 (or on CPU) to get the real line; check label and token ranges against the model's num_classes / vocab size.",
  'explain.code.no_gpu_visible.title': 'No GPU visible to the program',
  'explain.code.no_gpu_visible.meaning': 'The program sees no GPU (or fewer GPUs than it asked for).',
  'explain.code.no_gpu_visible.cause':
    "CUDA_VISIBLE_DEVICES hides the GPUs or names a GPU that does not exist, the container was started without GPUs, or (RunPod) the stopped pod's GPU was taken by someone else.",
  'explain.code.no_gpu_visible.fix':
    'Check CUDA_VISIBLE_DEVICES against nvidia-smi -L; start the container with GPUs; on RunPod, retry, migrate or recreate the pod (stop, never terminate: that deletes the volume).',
  'explain.code.port_not_listening.title': 'Web UI not reachable',
  'explain.code.port_not_listening.meaning':
    'A web UI (ComfyUI, Gradio, Jupyter...) did not answer on the address and port being opened.',
  'explain.code.port_not_listening.cause':
    "The app is bound to 127.0.0.1 instead of 0.0.0.0, listens on another port, or is not running; RunPod's PyTorch template starts Jupyter only when JUPYTER_PASSWORD is set.",
  'explain.code.port_not_listening.fix':
    'Start the app bound to 0.0.0.0 on the exposed port (e.g. --listen 0.0.0.0 / --host 0.0.0.0 --port N), expose that port when creating the instance, or use an SSH tunnel to 127.0.0.1.',
  'explain.code.hf_auth_required.title': 'Hugging Face login or model access required',
  'explain.code.hf_auth_required.meaning':
    'The Hugging Face Hub refused the download: the model is gated or private, and no token (or a token without access) was sent.',
  'explain.code.hf_auth_required.cause':
    'The model needs its licence accepted on its Hub page, and a token (HF_TOKEN or huggingface-cli login) on this machine.',
  'explain.code.hf_auth_required.fix':
    "Accept the model's terms on huggingface.co with your account, create a read token, and set HF_TOKEN on the machine (or run huggingface-cli login) before starting.",
  'explain.code.killed_oom_host.title': 'Killed by the kernel (host RAM)',
  'explain.code.killed_oom_host.meaning':
    'The process was killed by the operating system, almost always because the machine ran out of RAM (not GPU memory).',
  'explain.code.killed_oom_host.cause':
    "Loading a model or dataset into host RAM exceeded the machine's memory (model weights are read into RAM before they move to the GPU), or too many DataLoader workers.",
  'explain.code.killed_oom_host.fix':
    "Load with low_cpu_mem_usage / device_map, use safetensors and mmap, fewer DataLoader workers, or rent a machine with more RAM; dmesg shows the kernel's OOM-killer entry.",
};
