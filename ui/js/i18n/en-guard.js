// English texts of the Guard panel (Billing step): the idle-GPU guard that runs on the machine.
/** @type {Record<string, string>} */
export default {
  'guard.title': 'Guard on the machine',
  'guard.intro':
    'A small script gpurent installs on the machine over SSH. Every 30 s it checks the GPUs, SSH and VS Code connections, Ollama and Jupyter; when all of them have been idle for the time you choose, or at the deadline whatever they say, it warns open terminals and then stops the meter. It keeps working with gpurent closed and the laptop shut.',
  'guard.no_hosts': 'No saved host yet. Add one in the Hosts step, then set its guard here.',
  'guard.host': 'Machine',
  'guard.idle': 'Idle for (minutes, 1 or more)',
  'guard.util': 'GPU idle below (%)',
  'guard.deadline': 'Deadline from now (e.g. 90m, 2.5h)',
  'guard.deadline.at': 'that is {at}',
  'guard.deadline.none': 'no deadline',
  'guard.deadline.title': 'Deadline',
  'guard.action': 'Then',
  'guard.action.stop': 'Stop the machine',
  'guard.action.release': 'Release the machine',
  'guard.action.poweroff': 'Power off',
  'guard.action.command': 'Run my command',
  'guard.money.stop':
    'Stop: the guard asks {provider} to stop this machine. Its compute charge ends; its disk is kept and storage still bills until you release it.',
  'guard.money.stop_wiped':
    'Stop: the guard asks {provider} to stop this machine. Its compute charge ends, and its container disk is wiped: everything not downloaded or on a network volume is lost.',
  'guard.money.release':
    'Release: the guard asks {provider} to delete this machine. All its charges end, and its disk and everything on it are deleted.',
  'guard.money.poweroff':
    'Power off: the machine shuts down. On a VM you pay by the hour for, this stops the compute charge; in a container (RunPod, Vast) or on Lambda it usually does not stop the meter; storage may still bill.',
  'guard.money.command':
    'Your command runs on the machine, e.g. your platform’s own tool that stops the machine. Whether billing stops depends on what it does.',
  'guard.command': 'Command (run by sh on the machine)',
  'guard.command.placeholder': 'e.g. my-platform stop',
  'guard.full_key':
    'This machine has no API key of its own: put my account’s full API key on it so the guard can call the provider.',
  'guard.full_key.warn':
    'Who can read it there: the login user and root, anyone who gets onto the machine, the host operator (on Vast, whoever runs the physical machine can read its disk), and anyone who gets the disk or a copy of it. Any of them can use your whole account. The guard deletes the key once the provider confirms its stop or release; switching the guard off deletes it too.',
  'guard.set': 'Set the guard',
  'guard.cancel': 'Cancel',
  'guard.setting': 'Installing the guard on {host}…',
  'guard.set.ok': 'The guard is set on {host}.',
  'guard.set.running': 'Running on the machine (process {pid}).',
  'guard.set.not_running': 'Installed, but not running (process {pid}).',
  'guard.boot.systemd': 'Starts again after a reboot (systemd).',
  'guard.boot.crontab': 'Starts again after a reboot (crontab @reboot).',
  'guard.boot.none': 'Not started again after a reboot on this host: set it again after one.',
  'guard.set.watch': 'Connections on ports {ports} keep the machine alive.',
  'guard.set.command': 'When it acts it runs: {command}',
  'guard.set.provider.instance_env':
    'When it acts it calls {provider} ({method}) with the machine’s own key ({variable}), which can act only on this machine.',
  'guard.set.provider.full_key_file':
    'When it acts it calls {provider} ({method}) with your account’s full key, now on the machine as you allowed.',
  'guard.note.no_nvidia_smi': 'No nvidia-smi on the machine: the GPU counts as busy, so only the deadline can act.',
  'guard.note.no_reboot_start':
    'This host offers no way to start it after a reboot (usual in containers, where a restart is a new container).',
  'guard.note.container_poweroff':
    'This is a container: power off may not stop the provider’s meter. Prefer Stop or Release for a rented machine.',
  'guard.note.full_key_on_machine':
    'Your account’s FULL API key is on the machine (~/.gpurent/guard/provider.key, mode 0600). The login user and root, anyone who gets onto it, the host operator (on Vast) and anyone with its disk can read it and use your whole account. The guard deletes it after a confirmed stop or release; Off removes it.',
  'guard.note.http_tool_wget': 'No curl on the machine: the guard uses wget to call the provider.',
  'guard.deadline.none_warn':
    'no deadline — if a signal stays busy (a stuck job, a connection left open), nothing bounds the bill',
  'guard.deadline.fired': 'fired (never again; set the guard again for a new deadline)',
  'guard.inactive_limit': 'Connected but inactive',
  'guard.inactive_limit.with': 'a session with no input for {span} no longer keeps it alive ({n} such now)',
  'guard.last_sample': 'Last sample',
  'guard.ago': '{span} ago',
  'guard.signal.cpu': 'CPU (the machine’s own work)',
  'guard.signal.net': 'Network traffic',
  'guard.signal.keepalive': 'Keep-alive file (~/.gpurent/keepalive)',
  'guard.reading.cpu': '{pct} % of one core',
  'guard.reading.net': '{kbps} KiB/s',
  'guard.why.memory': 'GPU memory held (a loaded model)',
  'guard.why.hung': 'nvidia-smi did not answer',
  'guard.why.not_available': 'nvidia-smi says [N/A] (MIG or vGPU)',
  'guard.note.guard_stale':
    'The guard has not sampled for longer than it ever should: it is stuck, and neither idle nor the deadline can act. Set it again.',
  'guard.note.ssh_unmeasured':
    'Some SSH connections cannot be measured on this machine: they count as busy, and only the deadline bounds them.',
  'guard.ssh_measure.no_ss':
    'SSH: connections without a terminal (VS Code, a port forward) cannot be measured — there is no ss (iproute2) on the machine — so they count as busy.',
  'guard.ssh_measure.ss_failed':
    'SSH: connections without a terminal cannot be measured — ss failed on the machine — so they count as busy.',
  'guard.ssh_measure.other':
    'SSH: some connections cannot be measured (another user’s login, which the guard may not read) — they count as busy.',
  'guard.ssh_measure.applies':
    'None is open now: the connected-but-inactive limit still applies to the connections open (terminal logins are measured by their input).',
  'guard.ssh_measure.not_applies':
    'The connected-but-inactive limit does not apply to {n} connection(s) open now: only the deadline bounds them (install iproute2, or set a deadline).',
  'guard.note.no_deadline': 'No deadline is set: if a signal stays busy, nothing bounds the bill. Set one.',
  'guard.note.nvidia_smi_hung': 'nvidia-smi did not answer: the GPU counts as busy, so only the deadline can act.',
  'guard.note.gpu_not_available':
    'nvidia-smi says [N/A] (a MIG instance or a vGPU): the GPU counts as busy, so only the deadline can act.',
  'guard.status.title': 'What the guard sees',
  'guard.status.intro':
    'Read from the machine over SSH when you open this panel and when you press Refresh (at most every 30 s).',
  'guard.refresh': 'Refresh',
  'guard.status.running': 'The guard is running (process {pid}).',
  'guard.status.stopped': 'The guard is installed but not running.',
  'guard.status.not_set': 'No guard is set on this machine.',
  'guard.status.off': 'The guard on {host} is off. Its log stays on the machine.',
  'guard.status.spec': 'Acts after {idle} min idle (GPU below {util} %): {action}.',
  'guard.status.no_sample': 'No sample yet: the guard samples every 30 s. Refresh in a moment.',
  'guard.busy_because': 'Kept alive by: {signals}',
  'guard.decision.keep': 'kept alive',
  'guard.decision.idle': 'idle',
  'guard.decision.warn': 'warned',
  'guard.decision.snoozed': 'snoozed',
  'guard.decision.act': 'acted',
  'guard.decision.act_failed': 'action failed',
  'guard.decision.acted': 'already acted',
  'guard.decision.keep.long': 'Something keeps the machine alive.',
  'guard.decision.idle.long': 'Every signal is idle: the guard acts when the idle time is up.',
  'guard.decision.warn.long': 'The guard has warned open terminals and acts soon.',
  'guard.decision.snoozed.long': 'Snoozed: the guard will not act until the snooze ends.',
  'guard.decision.act.long': 'The guard has acted.',
  'guard.decision.act_failed.long': 'The guard tried to act and failed; it tries again on the next sample.',
  'guard.decision.acted.long': 'The guard acted a moment ago and waits before acting again.',
  'guard.cause.idle': 'idle time up',
  'guard.cause.deadline': 'deadline',
  'guard.col.signal': 'Signal',
  'guard.col.state': 'State',
  'guard.col.reading': 'Last reading',
  'guard.col.keeps': 'Keeps it alive',
  'guard.keeps': 'yes',
  'guard.signal.gpu': 'GPU',
  'guard.signal.ssh': 'SSH / VS Code connections',
  'guard.signal.ollama': 'Ollama model',
  'guard.signal.jupyter': 'Jupyter kernel',
  'guard.signal.ssh_new': 'someone just connected',
  'guard.state.idle': 'idle',
  'guard.state.busy': 'busy',
  'guard.state.unreadable': 'cannot read (counts as busy)',
  'guard.state.no_reading_yet': 'no reading yet (counts as busy)',
  'guard.state.absent': 'not running there',
  'guard.reading.gpu': 'highest {pct} %',
  'guard.reading.ssh': '{n} connection(s)',
  'guard.reading.none': 'no reading',
  'guard.why.utilization': 'at or above the threshold',
  'guard.why.processes': 'a compute process is running',
  'guard.why.no_nvidia_smi': 'no nvidia-smi',
  'guard.why.query_failed': 'nvidia-smi failed',
  'guard.why.unparsable': 'nvidia-smi gave no number',
  'guard.why.apps_failed': 'the process list failed',
  'guard.idle_since': 'Idle since',
  'guard.idle_since.busy': 'not idle',
  'guard.idle_acts': 'Acts when idle until',
  'guard.snoozed_until': 'Snoozed until',
  'guard.warning': 'Warning given',
  'guard.last_action': 'Last action',
  'guard.in': '(in {span})',
  'guard.now': '(now)',
  'guard.span.hm': '{h} h {m} min',
  'guard.span.ms': '{m} min {s} s',
  'guard.span.s': '{s} s',
  'guard.decisions': 'Last decisions',
  'guard.snooze_for': 'Snooze for',
  'guard.snooze': 'Snooze',
  'guard.off': 'Switch the guard off',
  'error.guard_not_installed': 'No guard is set on this machine.',
  'error.guard_install_failed': 'The guard could not be installed on the machine.',
  'error.guard_poweroff_unavailable':
    'The guard cannot power this machine off: the login user is not root and has no passwordless sudo, or there is no poweroff.',
  'error.guard_provider_action_unavailable':
    'The guard cannot stop or release this machine through a provider: {detail}',
  'error.guard_provider_credential_unavailable':
    'This machine has no API key of its own for the guard to call the provider with.',
  'error.guard_http_tool_missing':
    'The machine has neither curl nor a wget that can call the provider. Nothing was installed.',
  'error.guard_wrong_machine':
    'This machine says it is another instance ({detail}). The guard was not set and no key was written to it.',
  'error.guard_stale':
    'The guard on the machine is running but has not checked the machine for a while: it cannot act.',
  'guard.next.guard_not_installed': 'Set the guard first.',
  'guard.next.guard_install_failed':
    'Open the details for the machine’s output; check that its home folder is writable and its disk not full, then set it again.',
  'guard.next.guard_poweroff_unavailable':
    'Where the machine has a poweroff command: log in as root, or give the login user passwordless sudo for it (a sudoers line with NOPASSWD). Otherwise choose “Run my command”. Details says which it was.',
  'guard.next.guard_provider_action_unavailable':
    'Choose Power off or your own command, or Release if the provider cannot stop.',
  'guard.next.guard_provider_credential_unavailable':
    'Tick the box to put your full API key on the machine (read its warning), or choose Power off.',
  'guard.next.guard_http_tool_missing':
    'Install curl on the machine (e.g. apt-get install -y curl) and set it again, or choose Power off.',
  'guard.next.guard_wrong_machine':
    'Check that the saved host points at the machine you rented (its address may now belong to another instance), then set the guard again.',
  'guard.next.guard_stale':
    'Switch the guard off and set it again; if it stays stuck, the machine may have a hung GPU driver — stop or release it yourself.',
  'error.key_left':
    'The machine was stopped or released, but gpurent could not reach it first to delete the full account API key its guard held (~/.gpurent/guard/provider.key; {detail}). It may remain on the machine’s disk, where the host operator can read it: revoke that key in the provider’s console, create a new one and connect it again under Hosts → Provider accounts.',
};
