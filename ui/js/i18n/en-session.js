// English texts of the passphrase prompt, running operations, host-key hops and per-OS examples.
/** @type {Record<string, string>} */
export default {
  'unlock.title': 'Unlock the key “{label}”',
  'unlock.body':
    'This key is protected by a passphrase. gpurent asks once and keeps the unlocked key in memory until you quit gpurent or press “Forget unlocked keys” in Keys; it is never written anywhere.',
  'unlock.ok': 'Unlock',
  'unlock.cancel': 'Cancel',
  'keys.passphrase.label': 'Passphrase',
  'keys.lock': 'Forget unlocked keys',
  'keys.lock.hint':
    'Keys with a passphrase are unlocked once per session and held in memory only. Forget them now if you leave this computer; the next use asks again.',
  'keys.locked': 'Unlocked keys forgotten ({n}).',
  'keys.import.pick': 'Choose file…',
  'keys.import.pick.title': 'Choose a private key file',
  'keys.import.placeholder.linux': '~/.ssh/id_ed25519',
  'keys.import.placeholder.macos': '~/.ssh/id_ed25519',
  'keys.import.placeholder.windows': '~\\.ssh\\id_ed25519',

  'hosts.hop.target': 'the machine at {at}',
  'hosts.hop.jump': 'the jump host at {at} (in front of the machine)',
  'hosts.add.cancelled': 'Adding was cancelled; nothing was saved.',
  'hosts.export.placeholder.linux': '/home/you/gpurent-key (a new file)',
  'hosts.export.placeholder.macos': '/Users/you/gpurent-key (a new file)',
  'hosts.export.placeholder.windows': 'C:\\Users\\you\\gpurent-key (a new file)',

  'setup.cancel': 'Cancel',
  'setup.cancelled': 'Cancelled.',
  'verify.error.reported': 'The GPU check reported a problem (the tool’s own words are below).',

  'files.state.running': 'running',
  'files.local.placeholder.linux': '/home/you/dataset',
  'files.local.placeholder.macos': '/Users/you/dataset',
  'files.local.placeholder.windows': 'C:\\Users\\you\\dataset',
  'files.download.placeholder.linux': '/home/you/results',
  'files.download.placeholder.macos': '/Users/you/results',
  'files.download.placeholder.windows': 'C:\\Users\\you\\results',
};
