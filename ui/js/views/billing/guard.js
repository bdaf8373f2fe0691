// The Guard panel of the Billing step: set the idle-GPU guard that runs on the machine itself
// (docs/guard.md), read its status (each signal, what keeps the machine alive, idle since, the
// deadline, its last decisions), snooze it, switch it off. Each status read is one SSH call: on
// open, after Set/Snooze, and from the button no more than once every 30 s.
import { liveHosts, opCancel } from '../../api.js';
import {
  guardDecisions,
  guardDuration,
  guardOff,
  guardSet,
  guardSnooze,
  guardStatus,
  guardView,
} from '../../api-guard.js';
import { clear, el, newestOnly } from '../../dom.js';
import { errorText, language, num, t } from '../../i18n.js';
import { every, later } from '../../screen.js';

/** @typedef {import('../../../bindings/Host').Host} Host */
/** @typedef {import('../../../bindings/GuardView').GuardView} GuardView */
/** @typedef {import('../../../bindings/GuardStatus').GuardStatus} GuardStatus */
/** @typedef {import('../../../bindings/GuardSetReport').GuardSetReport} GuardSetReport */
/** @typedef {import('../../../bindings/SignalReading').SignalReading} SignalReading */
/** @typedef {import('../../../bindings/Decision').Decision} Decision */
/** @typedef {import('../../../bindings/ActionKind').ActionKind} ActionKind */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/** The shortest time between two status reads from the button. */
const READ_EVERY_MS = 30_000;
/** After Set, the guard's first sample takes a moment. */
const FIRST_SAMPLE_MS = 2500;
const SIGNALS = /** @type {const} */ (['gpu', 'ssh', 'cpu', 'net', 'keepalive', 'ollama', 'jupyter']);
/** Status notes that are warnings (the rest are facts). */
const WARN_NOTES = ['guard_stale', 'no_deadline', 'nvidia_smi_hung', 'gpu_not_available'];

/** @param {number} ms */
const clock = (ms) =>
  new Intl.DateTimeFormat(language(), { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }).format(
    new Date(ms),
  );

/** @param {number} s seconds */
function span(s) {
  const v = Math.max(0, Math.round(s));
  const h = Math.floor(v / 3600);
  const m = Math.floor((v % 3600) / 60);
  const sec = v % 60;
  if (h > 0) return t('guard.span.hm', { h, m });
  if (m > 0) return t('guard.span.ms', { m, s: sec });
  return t('guard.span.s', { s: sec });
}

/** A code's translated text, or the key itself left out. @param {string} key @param {string} fallback */
const maybe = (key, fallback) => {
  const v = t(key);
  return v === key ? fallback : v;
};

/** @param {string} id @param {string} label @param {HTMLElement} control @param {HTMLElement | null} [after] */
const field = (id, label, control, after = null) =>
  el('label', { class: 'field', for: id }, el('span', { text: label }), control, after);

/**
 * The error of a guard call in the panel: the translated code, what to do next, the detail.
 * @param {HTMLElement} box @param {unknown} e
 */
function showFailure(box, e) {
  const err = /** @type {ErrorPayload} */ (e);
  clear(box);
  box.hidden = false;
  box.dataset.code = err.code;
  box.append(el('p', { class: 'bad-text', text: errorText(err) }));
  const next = maybe(`guard.next.${err.code}`, '');
  if (next) box.append(el('p', { class: 'guard-next', text: next }));
  if (err.detail)
    box.append(el('details', {}, el('summary', { text: t('error.details') }), el('code', { text: err.detail })));
}

/** @param {HTMLElement} box */
function hideFailure(box) {
  clear(box);
  box.hidden = true;
  delete box.dataset.code;
}

/**
 * What an action does to the bill, for the panel's line under the action.
 * @param {ActionKind} a
 * @param {GuardView | null} view
 */
export function guardMoneyLine(a, view) {
  const provider = view?.provider ?? '';
  // A stop that wipes the disk (RunPod's container disk) is said as such, never "kept".
  const key = a === 'stop' && view?.stop_effect === 'gpu_billing_stops_disk_wiped' ? 'stop_wiped' : a;
  return t(`guard.money.${key}`, { provider });
}

/** @param {HTMLElement} root @param {AbortSignal} signal the Billing screen's */
export async function renderGuard(root, signal) {
  const hosts = await liveHosts().catch(() => /** @type {Host[]} */ ([]));
  if (signal.aborted) return;
  const card = el(
    'section',
    { class: 'card wide guard-card', id: 'guard-card' },
    el('h2', { text: t('guard.title') }),
    el('p', { class: 'muted small', text: t('guard.intro') }),
  );
  root.append(card);
  if (hosts.length === 0) {
    card.append(el('p', { id: 'guard-no-hosts', class: 'muted', text: t('guard.no_hosts') }));
    return;
  }

  const host = /** @type {HTMLSelectElement} */ (el('select', { id: 'guard-host' }));
  for (const h of hosts) host.append(el('option', { value: h.label, text: h.label }));
  const idle = /** @type {HTMLInputElement} */ (
    el('input', { id: 'guard-idle', type: 'number', min: '1', step: '1', value: '30', size: '6' })
  );
  const util = /** @type {HTMLInputElement} */ (
    el('input', { id: 'guard-util', type: 'number', min: '1', max: '100', step: '1', value: '5', size: '6' })
  );
  const deadline = /** @type {HTMLInputElement} */ (
    el('input', { id: 'guard-deadline', type: 'text', placeholder: '2.5h', spellcheck: 'false', size: '8' })
  );
  const deadlineAt = el('span', { id: 'guard-deadline-at', class: 'muted small' });
  const action = /** @type {HTMLSelectElement} */ (el('select', { id: 'guard-action' }));
  const actionMoney = el('p', { id: 'guard-action-money', class: 'guard-money small' });
  const command = /** @type {HTMLInputElement} */ (
    el('input', { id: 'guard-command', type: 'text', spellcheck: 'false', placeholder: t('guard.command.placeholder') })
  );
  const commandField = field('guard-command', t('guard.command'), command);
  const fullKey = /** @type {HTMLInputElement} */ (el('input', { id: 'guard-full-key', type: 'checkbox' }));
  const fullKeyBox = el(
    'label',
    { class: 'guard-full-key', for: 'guard-full-key' },
    fullKey,
    el('span', { text: t('guard.full_key') }),
    el('span', { class: 'bad-text small guard-full-key-warn', text: t('guard.full_key.warn') }),
  );
  const setBtn = el('button', { id: 'guard-set', type: 'submit', class: 'primary', text: t('guard.set') });
  const cancelBtn = el('button', { id: 'guard-cancel', type: 'button', text: t('guard.cancel'), hidden: true });
  const failure = el('div', { id: 'guard-error', class: 'guard-error', hidden: true });
  const result = el('div', { id: 'guard-result' });
  const status = el('div', { id: 'guard-status' });
  const refreshBtn = /** @type {HTMLButtonElement} */ (
    el('button', { id: 'guard-refresh', type: 'button', text: t('guard.refresh') })
  );
  const snoozeFor = /** @type {HTMLInputElement} */ (
    el('input', { id: 'guard-snooze-for', type: 'text', value: '30m', spellcheck: 'false', size: '6' })
  );
  const snoozeBtn = el('button', { id: 'guard-snooze', type: 'button', text: t('guard.snooze') });
  const offBtn = el('button', { id: 'guard-off', type: 'button', class: 'danger', text: t('guard.off') });

  // Snooze and Off only once a guard is there.
  const controls = el(
    'div',
    { class: 'row guard-controls', id: 'guard-controls', hidden: true },
    field('guard-snooze-for', t('guard.snooze_for'), snoozeFor),
    snoozeBtn,
    offBtn,
  );

  /** @type {{ view: GuardView | null, lastRead: number, opId: string | null }} */
  const st = { view: null, lastRead: 0, opId: null };

  const showAction = () => {
    const a = /** @type {ActionKind} */ (action.value);
    actionMoney.textContent = guardMoneyLine(a, st.view);
    commandField.hidden = a !== 'command';
    fullKeyBox.hidden = !(a === 'stop' || a === 'release');
  };

  // Typing "2.5h" asks for "2", "2.5" and "2.5h": only the newest answer is shown.
  const previews = newestOnly();
  const showDeadline = async () => {
    const newest = previews.begin();
    const text = deadline.value.trim();
    deadline.classList.remove('bad');
    deadlineAt.classList.remove('bad-text');
    if (!text) {
      // Nothing bounds the bill if a signal stays busy: say so where the deadline is chosen.
      deadlineAt.textContent = t('guard.deadline.none_warn');
      deadlineAt.classList.add('bad-text');
      return;
    }
    try {
      const p = await guardDuration(text);
      if (!newest()) return;
      deadlineAt.textContent = t('guard.deadline.at', { at: clock(Number(p.at_ms)) });
    } catch (e) {
      if (!newest()) return;
      deadline.classList.add('bad');
      deadlineAt.textContent = errorText(/** @type {ErrorPayload} */ (e));
    }
  };

  /** Load what gpurent set last and the actions this host can have (no SSH). */
  const loadView = async () => {
    hideFailure(failure);
    clear(result);
    try {
      const v = await guardView(host.value);
      st.view = v;
      clear(action);
      for (const a of v.actions) action.append(el('option', { value: a, text: t(`guard.action.${a}`) }));
      card.dataset.provider = v.provider ?? 'pasted';
      if (v.spec) {
        idle.value = String(Math.max(1, Math.round(Number(v.spec.idle_s) / 60)));
        util.value = String(v.spec.util_below);
        if (v.actions.includes(v.spec.action)) action.value = v.spec.action;
        command.value = v.spec.command ?? '';
        // The full-key consent is asked each time, never pre-ticked (not even from the last set).
        fullKey.checked = false;
      }
      showAction();
      await showDeadline();
    } catch (e) {
      showFailure(failure, e);
    }
  };

  /** One SSH read of the guard's status; then the decisions gpurent keeps. */
  const read = async () => {
    const label = host.value;
    st.lastRead = Date.now();
    refreshBtn.disabled = true;
    status.dataset.loading = 'true';
    try {
      const s = await guardStatus(label);
      const decisions = await guardDecisions(label, 8);
      if (signal.aborted || host.value !== label) return;
      hideFailure(failure);
      controls.hidden = !s.installed;
      renderStatus(s, decisions, Date.now(), status);
    } catch (e) {
      const err = /** @type {ErrorPayload} */ (e);
      clear(status);
      controls.hidden = true;
      if (err.code === 'guard_not_installed') {
        status.append(el('p', { id: 'guard-not-set', class: 'muted', text: t('guard.status.not_set') }));
      } else {
        showFailure(failure, e);
      }
    } finally {
      delete status.dataset.loading;
      const wait = READ_EVERY_MS - (Date.now() - st.lastRead);
      later(signal, Math.max(0, wait), () => {
        refreshBtn.disabled = false;
      });
    }
  };

  const form = el(
    'form',
    { id: 'guard-form', class: 'guard-form' },
    el(
      'div',
      { class: 'row form-row' },
      field('guard-host', t('guard.host'), host),
      field('guard-idle', t('guard.idle'), idle),
      field('guard-util', t('guard.util'), util),
      field('guard-deadline', t('guard.deadline'), deadline, deadlineAt),
      field('guard-action', t('guard.action'), action),
    ),
    actionMoney,
    commandField,
    fullKeyBox,
    el('div', { class: 'row' }, setBtn, cancelBtn),
    failure,
    result,
  );

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    hideFailure(failure);
    clear(result);
    const label = host.value;
    const req = {
      idle_minutes: Math.round(Number(idle.value)),
      util_below: Math.round(Number(util.value)),
      deadline: deadline.value.trim() || null,
      action: /** @type {ActionKind} */ (action.value),
      command: action.value === 'command' ? command.value : null,
      allow_full_key: (action.value === 'stop' || action.value === 'release') && fullKey.checked,
    };
    setBtn.setAttribute('disabled', '');
    cancelBtn.hidden = false;
    result.append(el('p', { id: 'guard-setting', class: 'muted', text: t('guard.setting', { host: label }) }));
    try {
      const rep = await guardSet(label, req, (p) => {
        if (p.kind === 'started') st.opId = p.op_id;
      });
      renderSet(rep, result);
      later(signal, FIRST_SAMPLE_MS, read);
    } catch (e) {
      clear(result);
      showFailure(failure, e);
      if (/** @type {ErrorPayload} */ (e).code === 'guard_provider_credential_unavailable')
        fullKeyBox.classList.add('ask');
    } finally {
      st.opId = null;
      setBtn.removeAttribute('disabled');
      cancelBtn.hidden = true;
    }
  });
  cancelBtn.addEventListener('click', () => {
    if (st.opId) opCancel(st.opId).catch(() => {});
  });
  host.addEventListener('change', async () => {
    clear(status);
    await loadView();
    await read();
  });
  action.addEventListener('change', showAction);
  deadline.addEventListener('input', showDeadline);
  refreshBtn.addEventListener('click', () => {
    if (Date.now() - st.lastRead >= READ_EVERY_MS) read();
  });
  snoozeBtn.addEventListener('click', async () => {
    hideFailure(failure);
    try {
      await guardSnooze(host.value, snoozeFor.value.trim());
      await read();
    } catch (e) {
      showFailure(failure, e);
    }
  });
  offBtn.addEventListener('click', async () => {
    hideFailure(failure);
    try {
      await guardOff(host.value);
      clear(result);
      clear(status);
      controls.hidden = true;
      status.append(el('p', { id: 'guard-is-off', class: 'muted', text: t('guard.status.off', { host: host.value }) }));
    } catch (e) {
      showFailure(failure, e);
    }
  });

  card.append(
    form,
    el('div', { class: 'guard-status-head row' }, el('h3', { text: t('guard.status.title') }), refreshBtn),
    el('p', { class: 'muted small', text: t('guard.status.intro') }),
    status,
    controls,
  );

  // The countdowns tick locally (no SSH); stops once the step is left.
  every(signal, 1000, () => {
    for (const node of card.querySelectorAll('[data-until-ms]')) {
      const until = Number(/** @type {HTMLElement} */ (node).dataset.untilMs);
      node.textContent =
        until > Date.now() ? t('guard.in', { span: span((until - Date.now()) / 1000) }) : t('guard.now');
    }
  });

  await loadView();
  if (!signal.aborted) await read();
}

/** @param {GuardSetReport} r @param {HTMLElement} box */
function renderSet(r, box) {
  clear(box);
  const lines = [
    t(r.running ? 'guard.set.running' : 'guard.set.not_running', { host: r.host, pid: r.pid ?? '-' }),
    t(`guard.boot.${r.boot}`),
    t('guard.set.watch', { ports: r.watch_ports.join(', ') }),
  ];
  if (r.provider_action) {
    lines.push(
      t(`guard.set.provider.${r.provider_action.credential}`, {
        provider: r.provider_action.provider,
        variable: r.provider_action.credential_var ?? '',
        method: r.provider_action.method,
      }),
    );
  } else {
    lines.push(t('guard.set.command', { command: r.action_command }));
  }
  const ul = el('ul', { class: 'guard-set-lines' }, ...lines.map((l) => el('li', { text: l })));
  box.append(
    el('p', {
      id: 'guard-set-ok',
      class: 'good-text',
      'data-running': String(r.running),
      text: t('guard.set.ok', { host: r.host }),
    }),
    ul,
  );
  for (const n of r.notes) {
    const cls = WARN_NOTES.includes(n) ? 'guard-note small bad-text' : 'guard-note small';
    box.append(el('p', { class: cls, 'data-note': n, text: maybe(`guard.note.${n}`, n) }));
  }
}

/**
 * The state in words: "no reading yet" for a first sample (busy all the same).
 * @param {SignalReading} r
 * @returns {string}
 */
function stateText(r) {
  if (r.state === 'unreadable' && r.why === 'no_reading_yet') return t('guard.state.no_reading_yet');
  return maybe(`guard.state.${r.state}`, r.state);
}

/**
 * @param {string} name @param {SignalReading | null} s
 * @returns {string}
 */
function readingText(name, s) {
  if (!s) return t('guard.reading.none');
  const why = s.why && s.why !== 'no_reading_yet' ? maybe(`guard.why.${s.why}`, s.why) : '';
  if (name === 'gpu') {
    const v = s.value === null ? '' : t('guard.reading.gpu', { pct: num(s.value, 0) });
    return [v, why].filter(Boolean).join(' · ');
  }
  if (name === 'ssh' && s.value !== null) return t('guard.reading.ssh', { n: num(s.value, 0) });
  if (name === 'cpu' && s.value !== null) return t('guard.reading.cpu', { pct: num(s.value, 0) });
  if (name === 'net' && s.value !== null) return t('guard.reading.net', { kbps: num(s.value, 0) });
  return why;
}

/**
 * SSH connections the guard cannot measure (no `ss` on the machine, `ss` failing, another user's
 * login) count as busy: say so, and whether the connected-but-inactive limit still applies (a
 * warning while such a connection is open: only the deadline bounds it).
 * @param {import('../../../bindings/SshMeasure').SshMeasure} m
 */
function sshMeasureNote(m) {
  const why = ['no_ss', 'ss_failed'].includes(m.traffic) ? m.traffic : 'other';
  const limit = m.inactive_limit_applies
    ? t('guard.ssh_measure.applies')
    : t('guard.ssh_measure.not_applies', { n: num(m.unmeasured, 0) });
  return el('p', {
    id: 'guard-ssh-measure',
    class: m.inactive_limit_applies ? 'guard-note muted' : 'guard-note bad-text',
    'data-note': 'ssh_unmeasured',
    'data-traffic': m.traffic,
    text: `${t(`guard.ssh_measure.${why}`)} ${limit}`,
  });
}

/**
 * @param {GuardStatus} s @param {Decision[]} decisions @param {number} readAt local ms of the read
 * @param {HTMLElement} box
 */
function renderStatus(s, decisions, readAt, box) {
  clear(box);
  // Host-clock seconds to local ms (the host's clock may differ from this computer's).
  const hostNow = s.host_now_s === null ? null : Number(s.host_now_s);
  /** @param {number | null} hs */
  const local = (hs) => (hs === null || hostNow === null ? null : readAt + (Number(hs) - hostNow) * 1000);
  box.dataset.running = String(s.running);
  if (!s.installed) {
    box.append(el('p', { id: 'guard-not-set', class: 'muted', text: t('guard.status.not_set') }));
    return;
  }
  const state = s.running ? t('guard.status.running', { pid: s.pid ?? '-' }) : t('guard.status.stopped');
  box.append(el('p', { id: 'guard-running', class: s.running ? 'good-text' : 'bad-text', text: state }));
  if (s.spec) {
    box.append(
      el('p', {
        class: 'muted small',
        id: 'guard-spec',
        text: t('guard.status.spec', {
          idle: num(Number(s.spec.idle_s) / 60, 0),
          util: s.spec.util_below,
          action: t(`guard.action.${s.spec.action}`),
        }),
      }),
    );
  }
  if (!s.last) {
    box.append(el('p', { id: 'guard-no-sample', class: 'muted', text: t('guard.status.no_sample') }));
    return;
  }
  // What the status itself warns of: a stuck loop, no deadline, a GPU it cannot read.
  for (const n of s.notes) {
    if (n === 'ssh_unmeasured' && s.ssh_measure) {
      box.append(sshMeasureNote(s.ssh_measure));
      continue;
    }
    const cls = WARN_NOTES.includes(n) ? 'guard-note bad-text' : 'guard-note muted';
    box.append(el('p', { class: cls, 'data-note': n, text: maybe(`guard.note.${n}`, n) }));
  }
  const last = s.last;
  const busy = last.decision === 'keep' ? last.why.split(',').filter(Boolean) : [];
  const because = busy.length
    ? t('guard.busy_because', { signals: busy.map((b) => maybe(`guard.signal.${b}`, b)).join(', ') })
    : t(`guard.decision.${last.decision}.long`);
  box.append(
    el('p', {
      id: 'guard-because',
      class: busy.length ? 'guard-alive' : 'guard-idle',
      'data-decision': last.decision,
      'data-why': last.why,
      text: because,
    }),
  );

  const table = el(
    'table',
    { id: 'guard-signals', class: 'guard-signals' },
    el(
      'thead',
      {},
      el('tr', {}, ...['signal', 'state', 'reading', 'keeps'].map((c) => el('th', { text: t(`guard.col.${c}`) }))),
    ),
  );
  const body = el('tbody');
  for (const name of SIGNALS) {
    const r = s[name];
    const keeps = r !== null && (r.state === 'busy' || r.state === 'unreadable');
    body.append(
      el(
        'tr',
        { 'data-signal': name, 'data-state': r?.state ?? 'none', class: keeps ? 'keeps' : '' },
        el('td', { text: t(`guard.signal.${name}`) }),
        el('td', { class: 'state', text: r ? stateText(r) : '—' }),
        el('td', { class: 'reading', text: readingText(name, r) }),
        el('td', { class: 'keeps', text: keeps ? t('guard.keeps') : '' }),
      ),
    );
  }
  table.append(body);
  box.append(table);

  const facts = el('dl', { class: 'guard-facts' });
  /** @param {string} id @param {string} label @param {string} value @param {number | null} [untilMs] */
  const fact = (id, label, value, untilMs = null) => {
    const dd = el('dd', { id, text: value });
    const row = el('div', {}, el('dt', { text: label }), dd);
    if (untilMs !== null) {
      const left = el('span', {
        class: 'guard-left',
        'data-until-ms': String(Math.round(untilMs)),
        text: untilMs > Date.now() ? t('guard.in', { span: span((untilMs - Date.now()) / 1000) }) : t('guard.now'),
      });
      dd.append(' ', left);
    }
    facts.append(row);
  };
  const idleSince = local(s.idle_since);
  fact('guard-idle-since', t('guard.idle_since'), idleSince === null ? t('guard.idle_since.busy') : clock(idleSince));
  if (idleSince !== null && s.spec) {
    fact(
      'guard-idle-acts',
      t('guard.idle_acts'),
      clock(idleSince + Number(s.spec.idle_s) * 1000),
      idleSince + Number(s.spec.idle_s) * 1000,
    );
  }
  const dl = local(s.deadline);
  const dlText = last.deadline_fired ? t('guard.deadline.fired') : t('guard.deadline.none');
  fact('guard-deadline-shown', t('guard.deadline.title'), dl === null ? dlText : clock(dl), dl);
  if (s.spec) {
    const inactive = last.ssh_inactive ?? 0;
    fact(
      'guard-inactive-limit',
      t('guard.inactive_limit'),
      inactive > 0
        ? t('guard.inactive_limit.with', { span: span(Number(s.spec.inactive_s)), n: num(inactive, 0) })
        : span(Number(s.spec.inactive_s)),
    );
  }
  if (s.last_sample_age_s !== null) {
    fact('guard-last-sample', t('guard.last_sample'), t('guard.ago', { span: span(Number(s.last_sample_age_s)) }));
  }
  const snooze = local(s.snooze_until);
  if (snooze !== null && snooze > readAt) fact('guard-snoozed', t('guard.snoozed_until'), clock(snooze), snooze);
  if (s.warning) fact('guard-warning', t('guard.warning'), s.warning.replace(/^\d+\s*/, ''));
  if (s.last_action) {
    const at = local(s.last_action.at);
    fact(
      'guard-last-action',
      t('guard.last_action'),
      `${at === null ? '' : clock(at)} ${t(`guard.decision.${s.last_action.decision}`)} (${maybe(`guard.cause.${s.last_action.why}`, s.last_action.why)})`,
    );
  }
  box.append(facts);

  box.append(el('h4', { text: t('guard.decisions') }));
  const ol = el('ol', { id: 'guard-decisions', class: 'guard-decisions' });
  for (const d of decisions) {
    const at = local(d.at);
    const why =
      d.decision === 'keep'
        ? d.why
            .split(',')
            .filter(Boolean)
            .map((b) => maybe(`guard.signal.${b}`, b))
            .join(', ')
        : maybe(`guard.cause.${d.why}`, d.why);
    ol.append(
      el(
        'li',
        { 'data-decision': d.decision },
        el('span', { class: 'when', text: at === null ? String(d.at) : clock(at) }),
        el('span', { class: 'what', text: t(`guard.decision.${d.decision}`) }),
        el('span', { class: 'why muted', text: why }),
      ),
    );
  }
  box.append(ol);
}
