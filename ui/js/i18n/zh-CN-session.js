// 口令提示、正在运行的操作、主机密钥所属的跳板/目标，以及按操作系统给出的路径示例。
/** @type {Record<string, string>} */
export default {
  'unlock.title': '解锁密钥“{label}”',
  'unlock.body':
    '这把密钥有口令保护。gpurent 只询问一次，并把解锁后的密钥保存在内存中，直到你退出 gpurent 或在“密钥”中点击“忘记已解锁的密钥”；它不会被写入任何地方。',
  'unlock.ok': '解锁',
  'unlock.cancel': '取消',
  'keys.passphrase.label': '口令',
  'keys.lock': '忘记已解锁的密钥',
  'keys.lock.hint':
    '有口令的密钥每次会话只需解锁一次，且只保存在内存中。离开这台电脑前可以立即忘记它们；下次使用时会再次询问。',
  'keys.locked': '已忘记解锁的密钥（{n} 把）。',
  'keys.import.pick': '选择文件…',
  'keys.import.pick.title': '选择私钥文件',
  'keys.import.placeholder.linux': '~/.ssh/id_ed25519',
  'keys.import.placeholder.macos': '~/.ssh/id_ed25519',
  'keys.import.placeholder.windows': '~\\.ssh\\id_ed25519',

  'hosts.hop.target': '位于 {at} 的机器',
  'hosts.hop.jump': '位于 {at} 的跳板机（在目标机器之前）',
  'hosts.add.cancelled': '已取消添加，没有保存任何内容。',
  'hosts.export.placeholder.linux': '/home/你的用户名/gpurent-key（新文件）',
  'hosts.export.placeholder.macos': '/Users/你的用户名/gpurent-key（新文件）',
  'hosts.export.placeholder.windows': 'C:\\Users\\你的用户名\\gpurent-key（新文件）',

  'setup.cancel': '取消',
  'setup.cancelled': '已取消。',
  'verify.error.reported': 'GPU 检查报告了一个问题（工具的原始输出见下方）。',

  'files.state.running': '传输中',
  'files.local.placeholder.linux': '/home/你的用户名/dataset',
  'files.local.placeholder.macos': '/Users/你的用户名/dataset',
  'files.local.placeholder.windows': 'C:\\Users\\你的用户名\\dataset',
  'files.download.placeholder.linux': '/home/你的用户名/results',
  'files.download.placeholder.macos': '/Users/你的用户名/results',
  'files.download.placeholder.windows': 'C:\\Users\\你的用户名\\results',
};
