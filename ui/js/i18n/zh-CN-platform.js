// 各操作系统相关的中文文本：打开终端和链接、各系统的 ssh-agent、本机无法使用的文件名（由 ../i18n.js 合并）。
/** @type {Record<string, string>} */
export default {
  'error.launcher_not_found': '在这台电脑上找不到可以打开它的程序。',
  'error.launch_refused': 'macOS 不允许 gpurent 控制“终端”。请在“系统设置 → 隐私与安全性 → 自动化”中允许，然后重试。',
  'error.launch_failed': '程序已启动，但报告了错误。',
  'error.name_not_representable':
    '某个文件名无法在这台电脑上使用（例如 Windows 保留的名称，或含有 : ? * | 等字符）。请在主机上改名后重试。',
  'hosts.sshconfig.noagent.short': '没有运行中的 ssh-agent，终端登录暂时无法使用该密钥。',
  'agent.hint.windows_service':
    '请以管理员身份在 PowerShell 中启动一次“OpenSSH Authentication Agent”服务：Get-Service ssh-agent | Set-Service -StartupType Automatic; Start-Service ssh-agent',
  'agent.hint.macos_launchd':
    'macOS 会自动运行 ssh-agent：请注销后重新登录，或从程序坞启动 gpurent，以便它能找到 agent。',
  'agent.hint.eval_ssh_agent':
    '请在启动 gpurent 的终端中启动一个：eval "$(ssh-agent -s)"（或使用桌面环境自带的 agent）。',
  'agent.keep.for_seconds': '密钥已加载到你的 ssh-agent，有效 {hours} 小时。',
  'agent.keep.until_agent_stops': '密钥已加载到你的 ssh-agent，直到你注销。',
  'agent.keep.until_removed': '密钥已加载到 Windows 的 ssh-agent，重启后仍会保留，直到你将其移除（ssh-add -d）。',
};
