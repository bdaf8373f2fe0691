// Chinese texts of "Explain this error", keyed as en-explain.js (per code: title, meaning, cause, fix).
/** @type {Record<string, string>} */
export default {
  'explain.title': '解释错误',
  'explain.intro':
    '粘贴一条错误或整段日志，gpurent 会说明它的含义、相关的行、可能的原因和修复方法。选择已保存的主机后，会结合它最近一次 Setup 检查的结果给出针对这台机器的答案。',
  'explain.paste': '日志或错误文本',
  'explain.host': '主机（可选）',
  'explain.host.none': '不选主机',
  'explain.run': '解释',
  'explain.button': '解释',
  'explain.running': '正在读取日志……',
  'explain.none': '未能识别（已读取 {lines} 行）。最像错误的几行：',
  'explain.none.empty': '未能识别（已读取 {lines} 行），也没有看起来像错误的行。',
  'explain.environment': '环境报告（用于提交问题；已去除凭据）',
  'explain.confidence.high': '高置信度',
  'explain.confidence.medium': '中等置信度',
  'explain.evidence': '相关的行',
  'explain.line': '第 {line} 行',
  'explain.cause': '可能的原因',
  'explain.fix': '修复方法',
  'explain.commands': '命令',
  'explain.consequence': '很可能是上面 {code} 的后果。',
  'explain.needs': '选择一台已经过 Setup 检查的主机，gpurent 还会查看：{facts}。',
  'explain.noprobe': '这台主机还没有 Setup 检查结果：先点“检查这台机器”，答案才能用上它的信息。',
  'explain.runfix': '运行这个修复（Setup）',
  'explain.unverified': '这条规则尚未与引用的来源核实。',
  'explain.sources': '来源：{sources}',
  'explain.remote.log': '主机上的日志（或错误详情）：',
  'explain.auto': 'gpurent 读取了失败启动的日志：',
  'explain.cause.arch_missing': '这是 {gpu}（{sm}）；已安装的 torch {torch} 的内核最高只到 {max}。',
  'explain.cause.arch_missing_has_it':
    '这是 {gpu}（{sm}）；检查到的 torch {torch} 含有它的内核，所以出错的进程用的是另一个环境，或是编译时没带这些内核的 CUDA 扩展。',
  'explain.cause.driver_too_old':
    '驱动 {driver} 最高支持 CUDA {driver_cuda}；程序需要 CUDA {needs}（驱动 {min_driver} 或更新）。',
  'explain.cause.driver_too_old_container':
    '驱动 {driver} 最高支持 CUDA {driver_cuda}；程序需要 CUDA {needs}（驱动 {min_driver} 或更新）。容器里的驱动属于宿主机：请换一台机器租用。',
  'explain.cause.shm_size': '这台主机的 /dev/shm 为 {mib} MiB（Docker 默认 64 MB）。',
  'explain.cause.gpu_memory': '{gpu} 有 {total} MiB 显存；检查时其他进程占用了 {others} MiB。',
  'explain.cause.host_memory': '这台机器有 {total} MiB 内存（检查时空闲 {free} MiB）。',
  'explain.cause.disk_free': '检查时 {path} 剩余 {free} MiB，共 {total} MiB。',
  'explain.cause.torch_cpu': '检查到的 torch {torch} 是 CPU 版本。',
  'explain.cause.torch_cuda': '检查到的 torch {torch} 是 CUDA {cuda} 版本：出错的程序用的是另一个环境。',
  'explain.cause.gpus_visible': '检查时看到 {count} 块 GPU（nvidia-smi：{state}）。',
  'explain.cause.driver_state': 'nvidia-smi：{state}；驱动 {driver}，已加载的内核模块 {module}。',
  'explain.cause.listens_on': '应用监听在 {address}:{port}。',
  'error.explain_log_unreadable': '无法读取日志文件。',
  'error.explain_probe_unreadable': '无法读取这台主机保存的 Setup 检查结果；请重新检查。',
  'explain.code.cuda_out_of_memory.title': '显存不足（CUDA out of memory）',
  'explain.code.cuda_out_of_memory.meaning': 'GPU 显存（VRAM）装不下这个模型或批次。',
  'explain.code.cuda_out_of_memory.cause': '模型、批大小或分辨率对这块 GPU 太大；显存碎片；或有其他进程占用显存。',
  'explain.code.cuda_out_of_memory.fix':
    '减小批大小或分辨率；卸载（offload）或量化模型；设置 PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True；用 nvidia-smi 查看是否有其他进程占用显存。',
  'explain.code.torch_cpu_build.title': 'PyTorch 是仅 CPU 版本',
  'explain.code.torch_cpu_build.meaning': '安装的 PyTorch 不含 CUDA 支持，因此无法使用 GPU。',
  'explain.code.torch_cpu_build.cause': '装上了 CPU 版的 wheel，常见于自定义节点、requirements.txt 或应用升级。',
  'explain.code.torch_cpu_build.fix':
    '用该环境自己的 python，从与驱动匹配的 download.pytorch.org/whl/cuXXX 索引重新安装 CUDA 版 torch。',
  'explain.code.driver_not_reachable.title': 'NVIDIA 驱动未加载',
  'explain.code.driver_not_reachable.meaning': '这台机器上没有程序能与 NVIDIA 驱动通信。',
  'explain.code.driver_not_reachable.cause':
    '内核升级后未经 DKMS 重建模块、nouveau 占用了 GPU，或安全启动（Secure Boot）阻止了模块；在租用的容器里这是宿主机的故障。',
  'explain.code.driver_not_reachable.fix':
    '重新安装或用 dkms 重建驱动模块，屏蔽 nouveau 后重启；租用的容器请重建实例。',
  'explain.code.nvml_version_mismatch.title': 'NVIDIA 驱动与库版本不一致',
  'explain.code.nvml_version_mismatch.meaning': '用户态 NVIDIA 库与已加载的内核模块版本不同。',
  'explain.code.nvml_version_mismatch.cause': '驱动被升级（常见于 unattended-upgrades）而旧的内核模块仍在运行。',
  'explain.code.nvml_version_mismatch.fix': '重启（或卸载并重新加载 nvidia 模块）；然后锁定驱动包，避免自动升级。',
  'explain.code.arch_not_supported.title': '没有适用于这块 GPU 架构的内核',
  'explain.code.arch_not_supported.meaning': '安装的 PyTorch（或某个 CUDA 扩展）不含这块 GPU 架构的内核。',
  'explain.code.arch_not_supported.cause':
    'wheel 或扩展缺少这块 GPU 的内核（Blackwell 的 sm_100/sm_120 需要 cu128 或更新的版本）。',
  'explain.code.arch_not_supported.fix':
    '安装其架构列表包含这块 GPU 的 torch（Blackwell 用 cu128+），然后重新编译或安装 CUDA 扩展（flash-attn、xformers、kornia）；对比 torch.cuda.get_arch_list() 与设备的计算能力。',
  'explain.code.driver_too_old.title': 'NVIDIA 驱动对这个 CUDA 来说太旧',
  'explain.code.driver_too_old.meaning': '程序（或容器镜像）是为比本机驱动支持的更新的 CUDA 构建的。',
  'explain.code.driver_too_old.cause': '镜像或 wheel 的 CUDA 版本高于宿主机驱动所支持的版本。',
  'explain.code.driver_too_old.fix':
    '租用驱动足够新的主机（RunPod allowedCudaVersions / --min-cuda-version；Vast @vastai-automatic-tag），在自己管理的虚拟机上升级驱动，或安装较旧的 cuXXX wheel。最低驱动：CUDA 11.x ≥ 450，12.x ≥ 525，13.x ≥ 580。',
  'explain.code.nccl_shm.title': '共享内存（/dev/shm）太小',
  'explain.code.nccl_shm.meaning': 'NCCL 或 DataLoader 的工作进程无法在 /dev/shm 中分配共享内存。',
  'explain.code.nccl_shm.cause':
    'Docker 默认的 /dev/shm 只有 64 MB，放不下 GPU 之间的 NCCL 缓冲区或 DataLoader 工作进程的数据。',
  'explain.code.nccl_shm.fix':
    '用更大的 /dev/shm（--shm-size=16g）或 --ipc=host 启动容器；临时办法是 NCCL_SHM_DISABLE=1（会变慢）；NCCL_DEBUG=INFO 可显示失败的调用。',
  'explain.code.nccl_p2p.title': 'GPU 点对点（P2P）通信失败',
  'explain.code.nccl_p2p.meaning': 'NCCL 无法在 GPU 之间直接拷贝数据（点对点）。',
  'explain.code.nccl_p2p.cause': '这些 GPU 之间不支持或无法正常使用 P2P（消费级显卡、虚拟机、部分 PCIe 拓扑）。',
  'explain.code.nccl_p2p.fix':
    '设置 NCCL_P2P_DISABLE=1（同时加大 /dev/shm）后重新运行；NCCL_DEBUG=INFO 可显示所用的传输方式。',
  'explain.code.nccl_timeout.title': 'NCCL 集合通信超时',
  'explain.code.nccl_timeout.meaning': '某个 rank 在集合通信（all-reduce、broadcast 等）中等待其他 rank 太久。',
  'explain.code.nccl_timeout.cause':
    '某个 rank 卡住或已退出：数据加载、只在 rank 0 上做的工作、死锁，或另一个 rank 上的错误（先看其他 rank 的日志）。',
  'explain.code.nccl_timeout.fix':
    '找出卡住的 rank（NCCL_DEBUG=INFO、各 rank 的日志）并修复其错误；rank 0 独占的长步骤可调大超时（init_process_group(timeout=...)）。',
  'explain.code.cudnn_missing.title': '找不到 cuDNN 库',
  'explain.code.cudnn_missing.meaning': '程序无法加载它编译时所依赖的 cuDNN 库。',
  'explain.code.cudnn_missing.cause':
    'CTranslate2/faster-whisper 需要 cuDNN 8，而 torch 或系统装的是 9；或 pip 安装的 nvidia-* 库不在 LD_LIBRARY_PATH 中。',
  'explain.code.cudnn_missing.fix':
    '安装程序需要的 cuDNN（apt install libcudnn8 / conda install cudnn），或把 pip 安装的 nvidia cublas 与 cudnn 的 lib 目录加入 LD_LIBRARY_PATH。',
  'explain.code.bitsandbytes_setup.title': 'bitsandbytes 无法配置 CUDA',
  'explain.code.bitsandbytes_setup.meaning': 'bitsandbytes 找不到可用于其 GPU 代码的 CUDA 库。',
  'explain.code.bitsandbytes_setup.cause': 'bitsandbytes 版本过旧、找不到 libcudart，或残留的 BNB_CUDA_VERSION。',
  'explain.code.bitsandbytes_setup.fix':
    '升级 bitsandbytes；运行 python -m bitsandbytes 查看报告；取消设置 BNB_CUDA_VERSION。',
  'explain.code.flash_attn_build.title': 'CUDA 扩展（flash-attn）编译失败',
  'explain.code.flash_attn_build.meaning': 'pip 试图从源码编译 CUDA 扩展（flash-attn），编译失败。',
  'explain.code.flash_attn_build.cause': '运行时（非 devel）镜像中没有 nvcc、未设置 CUDA_HOME，或编译太慢、内存不足。',
  'explain.code.flash_attn_build.fix':
    '使用 pip install flash-attn --no-build-isolation（torch 与 CUDA 匹配时会下载预编译 wheel）；否则使用带 nvcc 的 devel 镜像，安装 ninja 并限制 MAX_JOBS。',
  'explain.code.no_matching_wheel.title': '没有适合此 Python/平台的 wheel',
  'explain.code.no_matching_wheel.meaning': 'pip 在这个 Python 版本和平台上找不到所请求版本的安装包。',
  'explain.code.no_matching_wheel.cause':
    '没有这个 Python 版本的 wheel（例如旧版 torch 不支持 3.13），在 PyPI 上而不是 /whl/cuXXX 索引中查找 cuXXX 版本，或是 macOS。',
  'explain.code.no_matching_wheel.fix':
    '使用 Python 3.10–3.12 和 pytorch.org 给出的 https://download.pytorch.org/whl/cuXXX 索引。',
  'explain.code.disk_full.title': '磁盘已满',
  'explain.code.disk_full.meaning': '磁盘（或用户配额）已满，写入失败。',
  'explain.code.disk_full.cause':
    '根分区/容器盘太小，pip 缓存、TMPDIR 或模型下载把它占满了（仅 torch 的 CUDA 安装就要数 GB）。',
  'explain.code.disk_full.fix':
    '释放空间（pip cache purge），用 --no-cache-dir 安装，把 TMPDIR 和缓存（HF_HOME）指向数据盘，或换更大的磁盘。',
  'explain.code.device_side_assert.title': 'CUDA 设备端断言失败',
  'explain.code.device_side_assert.meaning':
    'GPU 内核自身的检查失败，最常见的是索引越界（标签 ≥ 类别数、token id ≥ 词表大小）。',
  'explain.code.device_side_assert.cause':
    '错误的数据进入了内核：类别标签不在 [0, num_classes) 内、token id 超出嵌入层大小，或张量形状不对。回溯中的 Python 行往往不是真正出错的位置。',
  'explain.code.device_side_assert.fix':
    '用 CUDA_LAUNCH_BLOCKING=1（或在 CPU 上）运行一次，找到真正出错的行；对照模型的 num_classes / 词表大小检查标签和 token 的范围。',
  'explain.code.no_gpu_visible.title': '程序看不到 GPU',
  'explain.code.no_gpu_visible.meaning': '程序看不到任何 GPU（或比它请求的少）。',
  'explain.code.no_gpu_visible.cause':
    'CUDA_VISIBLE_DEVICES 隐藏了 GPU 或指定了不存在的 GPU，容器启动时没有分配 GPU，或（RunPod）已停止的 pod 的 GPU 被别人占用了。',
  'explain.code.no_gpu_visible.fix':
    '对照 nvidia-smi -L 检查 CUDA_VISIBLE_DEVICES；启动容器时分配 GPU；在 RunPod 上重试、迁移或重建 pod（只停止，不要终止：终止会删除数据卷）。',
  'explain.code.port_not_listening.title': '无法访问 Web 界面',
  'explain.code.port_not_listening.meaning': 'Web 界面（ComfyUI、Gradio、Jupyter 等）在所访问的地址和端口上没有响应。',
  'explain.code.port_not_listening.cause':
    '应用绑定在 127.0.0.1 而不是 0.0.0.0，监听的是另一个端口，或根本没在运行；RunPod 的 PyTorch 模板只有在设置了 JUPYTER_PASSWORD 时才启动 Jupyter。',
  'explain.code.port_not_listening.fix':
    '让应用在对外开放的端口上绑定 0.0.0.0（例如 --listen 0.0.0.0 / --host 0.0.0.0 --port N），创建实例时开放该端口，或用 SSH 隧道访问 127.0.0.1。',
  'explain.code.hf_auth_required.title': '需要登录 Hugging Face 或模型访问权限',
  'explain.code.hf_auth_required.meaning':
    'Hugging Face Hub 拒绝了下载：模型是受限（gated）或私有的，而请求没有带令牌（或令牌无权访问）。',
  'explain.code.hf_auth_required.cause':
    '需要在模型的 Hub 页面上接受许可，并在这台机器上提供令牌（HF_TOKEN 或 huggingface-cli login）。',
  'explain.code.hf_auth_required.fix':
    '用你的账号在 huggingface.co 上接受该模型的条款，创建一个读取令牌，启动前在机器上设置 HF_TOKEN（或运行 huggingface-cli login）。',
  'explain.code.killed_oom_host.title': '被内核杀死（主机内存不足）',
  'explain.code.killed_oom_host.meaning': '进程被操作系统杀死，几乎总是因为机器内存（RAM）耗尽，而不是 GPU 显存。',
  'explain.code.killed_oom_host.cause':
    '把模型或数据集加载进主机内存时超出了机器的内存（模型权重先读入内存再移到 GPU），或 DataLoader 工作进程太多。',
  'explain.code.killed_oom_host.fix':
    '用 low_cpu_mem_usage / device_map 加载，使用 safetensors 和 mmap，减少 DataLoader 工作进程，或租内存更大的机器；dmesg 可看到内核 OOM killer 的记录。',
};
