// English texts of the Setup step (the wizard). Finding texts are keyed by the diagnosis code.
/** @type {Record<string, string>} */
export default {
  'setup.title': 'Set up the rented machine',
  'setup.intro':
    'gpurent looks at the machine in one go — GPU, driver, CUDA, Python, PyTorch — says what is wrong with the evidence, shows the exact fix, runs it if you agree, and proves the GPU works.',
  'setup.host': 'Host',
  'setup.nohosts': 'Add a host in the Hosts step first.',
  'setup.run': 'Check this machine',
  'setup.recheck': 'Check again',
  'setup.running': 'Looking at the machine…',
  'setup.verify': 'Verify the GPU',
  'setup.verifying': 'Running a GPU test (matrix multiply and memory copy)…',
  'setup.fix.run': 'Run fix',
  'setup.fix.stop': 'Stop',
  'setup.fix.running': 'Running the fix…',
  'setup.fix.done': 'Fix finished; checked again.',
  'setup.log': 'Output',
  'setup.evidence': 'Evidence',
  'setup.commands': 'Exact commands',
  'setup.step.connect': 'Connect',
  'setup.step.gpu_driver': 'GPU & driver',
  'setup.step.cuda': 'CUDA',
  'setup.step.python': 'Python',
  'setup.step.pytorch': 'PyTorch',
  'setup.step.verify': 'Verify on the GPU',
  'setup.state.pending': 'not checked',
  'setup.state.running': 'checking…',
  'setup.state.ok': 'OK',
  'setup.state.warn': 'warning',
  'setup.state.fail': 'problem',
  'setup.verdict.ready': 'Ready: PyTorch can use the GPU on this machine.',
  'setup.next.files': 'Next: move your files →',
  'setup.next.run': 'Next: run something →',
  'setup.verdict.fixable': 'Fixable here: run the fix below.',
  'setup.verdict.blocked.manual': 'Needs a manual step (see below).',
  'setup.verdict.blocked.reboot': 'Needs a reboot of the machine (see below).',
  'setup.verdict.blocked.driver_upgrade': 'Needs a newer NVIDIA driver on this machine, then a reboot.',
  'setup.verdict.blocked.different_host':
    'Cannot be fixed on this machine: rent a different one (see below what to filter for).',
  'setup.verify.ok': '{gpu}: {tflops} TFLOPS bf16 matmul ({pct} % of spec), {gbps} GB/s copy, {vram} GiB.',
  'setup.verify.nospec': '{gpu}: {tflops} TFLOPS, {gbps} GB/s, {vram} GiB (no catalog spec to compare).',

  'suspect.slow_matmul':
    'This may not be the card you paid for: matrix multiply reached {achieved_tflops} TFLOPS, {fraction} % of the {spec_tflops} TFLOPS spec.',
  'suspect.slow_memory':
    'This may not be the card you paid for: memory copy reached {achieved_gbps} GB/s, {fraction} % of the {spec_gbps} GB/s spec.',
  'suspect.vram_mismatch':
    'This may not be the card you paid for: it reports {reported_gib} GiB, the spec is {spec_gb} GB.',
  'suspect.unknown_card': 'This GPU is not in gpurent’s catalog, so there is no spec to compare with.',

  'find.ready': 'PyTorch {torch} sees {gpus} GPU(s) through CUDA {torch_cuda}.',
  'find.no_nvidia_gpu': 'No NVIDIA GPU on this machine: nvidia-smi is missing or finds nothing.',
  'find.driver_not_loaded': 'The NVIDIA driver is installed but not loaded (nvidia-smi cannot talk to it).',
  'find.nvml_driver_mismatch':
    'Driver and library versions differ (“Failed to initialize NVML”): the driver was updated without a reboot.',
  'find.no_devices': 'The driver is loaded but reports no GPU: the container or VM was given none.',
  'find.gpu_lost': 'The GPU has fallen off the bus (“GPU is lost”): it needs a reset or a reboot.',
  'find.gpu_busy': 'GPU {gpu_index} is already in use: {memory_used_mib} MiB taken by other processes.',
  'find.python_missing': 'No Python 3 on this machine.',
  'find.torch_missing': 'PyTorch is not installed.',
  'find.torch_cpu_only': 'PyTorch {torch} is a CPU-only build (“Torch not compiled with CUDA enabled”).',
  'find.driver_too_old_for_torch':
    'PyTorch {torch} needs CUDA {torch_cuda}, but this driver supports CUDA {driver_cuda} at most.',
  'find.driver_too_old_for_torch.compat':
    'PyTorch {torch} is built for CUDA {torch_cuda}; this driver supports CUDA {driver_cuda}. It runs through minor-version compatibility, but code that compiles GPU kernels at run time may fail.',
  'find.gpu_arch_unsupported_by_torch':
    'This PyTorch build has no kernels for {gpu} (compute capability {compute_cap}): “no kernel image is available”.',
  'find.python_unsupported_by_torch': 'Python {python} is not supported by this PyTorch.',
  'find.cuda_toolkit_missing': 'No CUDA toolkit (nvcc). PyTorch does not need it; only building CUDA extensions does.',
  'find.cuda_toolkit_mismatch':
    'The CUDA toolkit (nvcc {nvcc}) is a different CUDA major than PyTorch’s, or newer than the driver; extensions built with it may fail.',
  'find.cuda_toolkit_off_path':
    'The CUDA toolkit (nvcc {nvcc}) matches PyTorch’s CUDA, but {dir} is not on the PATH of non-interactive sessions, so building CUDA extensions would not find nvcc. Nothing needs reinstalling.',
  'find.container_driver_fixed':
    'This is a container: the driver belongs to the host machine and cannot be changed from inside.',
  'find.disk_low': 'Only {available_mib} MiB free on {path}; about {needed_mib} MiB are needed.',
  'find.pytorch_index_unreachable': 'download.pytorch.org cannot be reached from this machine.',
  'find.torch_cuda_unavailable': 'PyTorch matches the driver and GPU but still reports no CUDA.',

  'note.force_reinstall': 'Replaces the installed {installed} (--force-reinstall).',
  'note.uses_mirror': 'Uses the mirror {mirror_id} because the official index is unreachable.',
  'note.pypi_default_build_only': 'Only the default PyPI build ({variant}) is reachable.',
  'note.no_cache_dir': 'Disk is tight ({available_mib} MiB free): pip runs without its cache.',
  'note.minor_version_compat':
    'CUDA {wheel_cuda} wheels run on this CUDA {driver_cuda} driver through minor-version compatibility.',
  'note.new_venv': 'Installs into a new virtual environment at {path}.',
  'note.new_conda_env': 'Creates the conda environment {name} with Python {python}.',
  'note.active_env': 'Installs into the active environment ({python}).',
  'note.reboot_follows': 'The machine reboots afterwards.',
  'note.rent_host_with_cuda': 'When renting, filter for CUDA ≥ {min_cuda}.',
  'note.driver_branch': 'Needs driver branch {branch}.',
  'note.only_for_extensions': 'Only needed to compile CUDA extensions.',
  'note.add_cuda_to_path': 'Add /usr/local/cuda/bin to PATH to use it.',
  'note.shell_profile':
    'Adds {dir} to PATH in a block marked “gpurent” at the top of ~/.bashrc and ~/.profile (added once), so every new session finds nvcc.',
  'note.driver_branch.long_term_support':
    'Installs driver branch {branch}, a long-term support branch (supported until {supported_until}); the minimum for this CUDA is {minimum_branch}.',
  'note.driver_branch.production':
    'Installs driver branch {branch}, a production branch (supported until {supported_until}); the minimum for this CUDA is {minimum_branch}.',
  'note.driver_branch.new_feature':
    'Installs driver branch {branch}, a short-lived new-feature branch (supported until {supported_until}): no supported long-term or production branch runs this CUDA yet. Minimum: {minimum_branch}.',
  'note.driver_branch.unknown':
    'Installs driver branch {branch}, the minimum for this CUDA ({minimum_branch}); its support status is not in gpurent’s data.',
  'note.provider_fault': 'This is the platform’s problem: contact its support or rent another machine.',
  'error.fix_failed_network':
    'The fix stopped: the download failed (network). What was downloaded is kept; run the fix again to continue.',
  'error.fix_failed_disk_full': 'The fix stopped: the host’s disk is full. Free space, then run it again.',
  'error.fix_failed': 'A command of the fix failed. Its output is above; running it again is safe.',
  'error.fix_already_running': 'A fix is already running on this host. Wait for it or stop it first.',
  'error.probe_not_run':
    'The host did not run gpurent’s check (what came back is saved: {detail}). Make sure the account has a POSIX sh and that no forced command or login menu takes over the SSH session, then check again.',
  'setup.verify.issue.verify_torch_import_failed':
    'PyTorch could not be imported by the interpreter the GPU test ran with: {detail}. Run the fix first, or check that this interpreter is the one PyTorch was installed into.',
  'setup.verify.issue.verify_cuda_unavailable':
    'PyTorch {torch} is installed but sees no CUDA (torch.cuda.is_available() is False): check the machine again to see why.',
  'setup.verify.issue.verify_gpu_check_failed':
    'The GPU test failed on GPU {gpu_index}: {detail}. Stop other processes using the GPU, or replace the instance if it keeps failing.',
  'setup.verify.issue.verify_interpreter_failed':
    '{python} exited with status {exit_status} before the GPU test could run ({stderr_line}). Check the machine again, then verify.',
  'error.nothing_to_fix':
    'There is nothing gpurent can run here (the host is ready, or needs a reboot, a driver upgrade or another host).',
};
