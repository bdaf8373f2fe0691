// “环境配置”步骤（向导）的简体中文文本。诊断结果按代码翻译。
/** @type {Record<string, string>} */
export default {
  'setup.title': '配置租用的机器',
  'setup.intro':
    'gpurent 一次性检查整台机器——GPU、驱动、CUDA、Python、PyTorch——给出问题和证据，显示确切的修复命令，经你同意后执行，并在 GPU 上验证。',
  'setup.host': '主机',
  'setup.nohosts': '请先在“主机”步骤添加主机。',
  'setup.run': '检查这台机器',
  'setup.recheck': '重新检查',
  'setup.running': '正在检查机器…',
  'setup.verify': '验证 GPU',
  'setup.verifying': '正在运行 GPU 测试（矩阵乘法和显存拷贝）…',
  'setup.fix.run': '执行修复',
  'setup.fix.stop': '停止',
  'setup.fix.running': '正在执行修复…',
  'setup.fix.done': '修复完成，已重新检查。',
  'setup.log': '输出',
  'setup.evidence': '证据',
  'setup.commands': '确切的命令',
  'setup.step.connect': '连接',
  'setup.step.gpu_driver': 'GPU 与驱动',
  'setup.step.cuda': 'CUDA',
  'setup.step.python': 'Python',
  'setup.step.pytorch': 'PyTorch',
  'setup.step.verify': '在 GPU 上验证',
  'setup.state.pending': '未检查',
  'setup.state.running': '检查中…',
  'setup.state.ok': '正常',
  'setup.state.warn': '警告',
  'setup.state.fail': '有问题',
  'setup.verdict.ready': '就绪：这台机器上的 PyTorch 可以使用 GPU。',
  'setup.next.files': '下一步：传输文件 →',
  'setup.next.run': '下一步：运行 →',
  'setup.verdict.fixable': '可在此修复：执行下面的修复。',
  'setup.verdict.blocked.manual': '需要手动处理（见下文）。',
  'setup.verdict.blocked.reboot': '需要重启这台机器（见下文）。',
  'setup.verdict.blocked.driver_upgrade': '需要在这台机器上升级 NVIDIA 驱动，然后重启。',
  'setup.verdict.blocked.different_host': '这台机器上无法修复：请换一台（下文说明租用时该筛选什么）。',
  'setup.verify.ok': '{gpu}：bf16 矩阵乘法 {tflops} TFLOPS（规格的 {pct}%），拷贝 {gbps} GB/s，显存 {vram} GiB。',
  'setup.verify.nospec': '{gpu}：{tflops} TFLOPS，{gbps} GB/s，{vram} GiB（目录中没有可比较的规格）。',

  'suspect.slow_matmul':
    '这可能不是你付费租用的那张卡：矩阵乘法只有 {achieved_tflops} TFLOPS，是规格 {spec_tflops} TFLOPS 的 {fraction}%。',
  'suspect.slow_memory':
    '这可能不是你付费租用的那张卡：显存拷贝只有 {achieved_gbps} GB/s，是规格 {spec_gbps} GB/s 的 {fraction}%。',
  'suspect.vram_mismatch': '这可能不是你付费租用的那张卡：它报告 {reported_gib} GiB，规格为 {spec_gb} GB。',
  'suspect.unknown_card': '这张 GPU 不在 gpurent 的目录中，没有可比较的规格。',

  'find.ready': 'PyTorch {torch} 通过 CUDA {torch_cuda} 识别到 {gpus} 张 GPU。',
  'find.no_nvidia_gpu': '这台机器上没有 NVIDIA GPU：nvidia-smi 不存在或找不到设备。',
  'find.driver_not_loaded': 'NVIDIA 驱动已安装但未加载（nvidia-smi 无法与之通信）。',
  'find.nvml_driver_mismatch': '驱动与库版本不一致（“Failed to initialize NVML”）：驱动更新后未重启。',
  'find.no_devices': '驱动已加载但没有 GPU：容器或虚拟机没有分配到 GPU。',
  'find.gpu_lost': 'GPU 已从总线上掉线（“GPU is lost”）：需要重置或重启。',
  'find.gpu_busy': 'GPU {gpu_index} 已被占用：其他进程占了 {memory_used_mib} MiB。',
  'find.python_missing': '这台机器上没有 Python 3。',
  'find.torch_missing': '没有安装 PyTorch。',
  'find.torch_cpu_only': 'PyTorch {torch} 是仅 CPU 版本（“Torch not compiled with CUDA enabled”）。',
  'find.driver_too_old_for_torch': 'PyTorch {torch} 需要 CUDA {torch_cuda}，但这个驱动最高只支持 CUDA {driver_cuda}。',
  'find.driver_too_old_for_torch.compat':
    'PyTorch {torch} 为 CUDA {torch_cuda} 构建；这个驱动支持 CUDA {driver_cuda}。它能通过次版本兼容运行，但运行时编译 GPU 内核的代码可能出错。',
  'find.gpu_arch_unsupported_by_torch':
    '这个 PyTorch 版本没有适用于 {gpu}（计算能力 {compute_cap}）的内核：“no kernel image is available”。',
  'find.python_unsupported_by_torch': '这个 PyTorch 不支持 Python {python}。',
  'find.cuda_toolkit_missing': '没有 CUDA 工具包（nvcc）。PyTorch 本身不需要，只有编译 CUDA 扩展时才需要。',
  'find.cuda_toolkit_mismatch':
    'CUDA 工具包（nvcc {nvcc}）与 PyTorch 的 CUDA 主版本不同，或比驱动支持的更新；用它编译的扩展可能出错。',
  'find.cuda_toolkit_off_path':
    'CUDA 工具包（nvcc {nvcc}）与 PyTorch 的 CUDA 一致，但 {dir} 不在非交互会话的 PATH 中，编译 CUDA 扩展时会找不到 nvcc。无需重装任何东西。',
  'find.container_driver_fixed': '这是容器：驱动属于宿主机，容器内无法更改。',
  'find.disk_low': '{path} 只剩 {available_mib} MiB，约需 {needed_mib} MiB。',
  'find.pytorch_index_unreachable': '这台机器无法访问 download.pytorch.org。',
  'find.torch_cuda_unavailable': 'PyTorch 与驱动和 GPU 都匹配，但仍然报告没有 CUDA。',

  'note.force_reinstall': '会替换已安装的 {installed}（--force-reinstall）。',
  'note.uses_mirror': '因官方源无法访问，改用镜像 {mirror_id}。',
  'note.pypi_default_build_only': '只能访问 PyPI 的默认版本（{variant}）。',
  'note.no_cache_dir': '磁盘紧张（剩余 {available_mib} MiB）：pip 不使用缓存。',
  'note.minor_version_compat': 'CUDA {wheel_cuda} 的包通过次版本兼容在这个 CUDA {driver_cuda} 驱动上运行。',
  'note.new_venv': '安装到新的虚拟环境 {path}。',
  'note.new_conda_env': '创建 conda 环境 {name}（Python {python}）。',
  'note.active_env': '安装到当前环境（{python}）。',
  'note.reboot_follows': '之后机器会重启。',
  'note.rent_host_with_cuda': '租用时请筛选 CUDA ≥ {min_cuda}。',
  'note.driver_branch': '需要驱动分支 {branch}。',
  'note.only_for_extensions': '只有编译 CUDA 扩展时才需要。',
  'note.add_cuda_to_path': '把 /usr/local/cuda/bin 加入 PATH 即可使用。',
  'note.shell_profile':
    '在 ~/.bashrc 和 ~/.profile 顶部加入一段标有“gpurent”的配置（只加一次），把 {dir} 加入 PATH，之后每个新会话都能找到 nvcc。',
  'note.driver_branch.long_term_support':
    '安装驱动分支 {branch}，这是长期支持分支（支持到 {supported_until}）；这个 CUDA 的最低要求是 {minimum_branch}。',
  'note.driver_branch.production':
    '安装驱动分支 {branch}，这是生产分支（支持到 {supported_until}）；这个 CUDA 的最低要求是 {minimum_branch}。',
  'note.driver_branch.new_feature':
    '安装驱动分支 {branch}，这是短期的新功能分支（支持到 {supported_until}）：目前没有受支持的长期或生产分支能运行这个 CUDA。最低要求：{minimum_branch}。',
  'note.driver_branch.unknown':
    '安装驱动分支 {branch}，即这个 CUDA 的最低要求（{minimum_branch}）；gpurent 的数据中没有它的支持状态。',
  'note.provider_fault': '这是平台的问题：请联系平台客服或换一台机器。',
  'error.fix_failed_network': '修复中断：下载失败（网络问题）。已下载的部分会保留；再次执行修复即可继续。',
  'error.fix_failed_disk_full': '修复中断：主机磁盘已满。请腾出空间后再次执行。',
  'error.fix_failed': '修复中的某条命令失败了。输出见上方；再次执行是安全的。',
  'error.fix_already_running': '这台主机上已有修复在运行。请等待它结束或先停止它。',
  'error.probe_not_run':
    '主机没有运行 gpurent 的检查（返回的内容已保存：{detail}）。请确认该账号有 POSIX sh，且没有强制命令或登录菜单接管 SSH 会话，然后再检查一次。',
  'setup.verify.issue.verify_torch_import_failed':
    'GPU 测试所用的解释器无法导入 PyTorch：{detail}。请先执行修复，或确认 PyTorch 安装在这个解释器中。',
  'setup.verify.issue.verify_cuda_unavailable':
    '已安装 PyTorch {torch}，但它看不到 CUDA（torch.cuda.is_available() 为 False）：请再检查一次机器查看原因。',
  'setup.verify.issue.verify_gpu_check_failed':
    'GPU {gpu_index} 上的 GPU 测试失败：{detail}。请停止其他占用 GPU 的进程；若一直失败，请更换实例。',
  'setup.verify.issue.verify_interpreter_failed':
    '{python} 在 GPU 测试运行前以状态 {exit_status} 退出（{stderr_line}）。请再检查一次机器，然后重新验证。',
  'error.nothing_to_fix': '这里没有 gpurent 能执行的修复（主机已就绪，或需要重启、升级驱动或换一台主机）。',
};
