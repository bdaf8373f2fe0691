// English texts of the per-OS parts: launching terminals and links, the ssh-agent per OS, and
// file names a computer cannot hold (merged into the dictionary by ../i18n.js).
/** @type {Record<string, string>} */
export default {
  'error.launcher_not_found': 'No program to open it was found on this computer.',
  'error.launch_refused':
    'macOS did not allow gpurent to control Terminal. Allow it in System Settings → Privacy & Security → Automation, then try again.',
  'error.launch_failed': 'The program started but reported an error.',
  'error.name_not_representable':
    'A file name cannot be used on this computer (for example a name Windows reserves, or with : ? * | in it). Rename it on the host and try again.',
  'hosts.sshconfig.noagent.short': 'No ssh-agent is running, so terminal logins cannot use the key yet.',
  'agent.hint.windows_service':
    'Start the “OpenSSH Authentication Agent” service once, in PowerShell as administrator: Get-Service ssh-agent | Set-Service -StartupType Automatic; Start-Service ssh-agent',
  'agent.hint.macos_launchd':
    'macOS runs ssh-agent for you: log out and in again, or start gpurent from the Dock, so it can find it.',
  'agent.hint.eval_ssh_agent':
    'Start one in the shell you start gpurent from: eval "$(ssh-agent -s)" (or use your desktop’s agent).',
  'agent.keep.for_seconds': 'The key was loaded into your ssh-agent for {hours} hours.',
  'agent.keep.until_agent_stops': 'The key was loaded into your ssh-agent until you log out.',
  'agent.keep.until_removed':
    'The key was loaded into Windows’ ssh-agent, which keeps it across restarts until you remove it (ssh-add -d).',
};
