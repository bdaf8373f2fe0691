// Step 3, Hosts: paste what the platform shows; confirm the machine's fingerprint on first
// contact; gpurent installs your key with the pasted password (once) and remembers the host.
import {
  keyExportPrivate,
  hostAdd,
  hostCheck,
  hostDelete,
  hostList,
  hostOpenTerminal,
  hostOpenVscode,
  hostPreview,
  hostRepin,
  hostSshConfig,
  keyList,
} from '../../api.js';
import { hideError, showError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { language, t } from '../../i18n.js';
import * as ops from '../../ops.js';
import { platform } from '../../platform.js';
import { debounced, redraws } from '../../screen.js';
import { renderRented } from './rented.js';
import { setupOn } from '../setup/setup.js';

/** @typedef {import('../../../bindings/Host').Host} Host */
/** @typedef {import('../../../bindings/HostCheck').HostCheck} HostCheck */
/** @typedef {import('../../../bindings/ParsedHostSummary').ParsedHostSummary} ParsedHostSummary */
/** @typedef {import('../../../bindings/ParseWarning').ParseWarning} ParseWarning */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {import('../../../bindings/ErrorData').ErrorData} ErrorData */
/** @typedef {import('../../../bindings/Opened').Opened} Opened */

/**
 * Which machine a host-key error is about, as the payload's fields say (never read from text).
 * @param {ErrorData | undefined} d @param {string} fallback
 */
function hopText(d, fallback) {
  const at = d?.host ? `${d.host}:${d.port ?? 22}` : fallback;
  return d?.role === 'jump' ? t('hosts.hop.jump', { at }) : t('hosts.hop.target', { at });
}

/** @param {ParseWarning} w */
function warningText(w) {
  const { kind, ...params } = w;
  return t(`warn.${kind}`, /** @type {Record<string, string | number>} */ (params));
}

/**
 * "Opened", with how long the ssh-agent keeps the key on this OS (Windows' agent: until removed).
 * @param {Opened} o
 */
function openedText(o) {
  const k = o.agent_keep;
  if (k.kind === 'for_seconds') return t('agent.keep.for_seconds', { hours: String(Math.round(k.seconds / 3600)) });
  return t(`agent.keep.${k.kind}`);
}

/** @param {{ user: string, host?: string, address?: string, port: number }} h */
const target = (h) => `${h.user}@${h.host ?? h.address}:${h.port}`;

/** @param {Host} h */
function sshCommand(h) {
  const jump = h.jump ? ` -J ${h.jump.user}@${h.jump.address}:${h.jump.port}` : '';
  return `ssh -p ${h.port}${jump} ${h.user}@${h.address}`;
}

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderHosts(root, signal) {
  const status = el('p', { class: 'muted', id: 'host-status', role: 'status' });
  const list = el('div', { id: 'host-list' });
  const paste = /** @type {HTMLTextAreaElement} */ (
    el('textarea', { id: 'host-paste', rows: '3', spellcheck: 'false', placeholder: t('hosts.paste.placeholder') })
  );
  const preview = el('div', { id: 'host-preview', class: 'preview muted' });
  const label = /** @type {HTMLInputElement} */ (el('input', { id: 'host-label', type: 'text', autocomplete: 'off' }));
  const keySel = /** @type {HTMLSelectElement} */ (el('select', { id: 'host-key' }));
  const add = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'host-add', class: 'primary', text: t('hosts.add.button') })
  );
  const harden = /** @type {HTMLInputElement} */ (el('input', { id: 'host-harden', type: 'checkbox' }));
  const prompt = el('div', { id: 'hostkey-prompt', class: 'prompt', hidden: true });
  const rented = el('div', { id: 'rented-slot' });

  try {
    const keys = await keyList();
    if (keys.length === 0) keySel.append(el('option', { value: '', text: t('hosts.key.none') }));
    for (const k of keys) keySel.append(el('option', { value: k.label, text: `${k.label} (${k.algorithm})` }));
  } catch (e) {
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
  }
  if (signal.aborted) return;

  /** @type {ParsedHostSummary | null} */
  let parsed = null;
  paste.addEventListener(
    'input',
    debounced(signal, 200, async () => {
      clear(preview);
      parsed = null;
      if (!paste.value.trim()) return;
      try {
        parsed = await hostPreview(paste.value);
        preview.append(
          el('p', {
            text: `${t('hosts.preview', { target: target(parsed) })}${parsed.jump ? ` ${t('hosts.preview.jump', { jump: `${parsed.jump.user ?? parsed.user}@${parsed.jump.host}:${parsed.jump.port}` })}` : ''}`,
          }),
        );
        if (parsed.has_password)
          preview.append(
            el('p', { class: 'ok-text', text: keySel.value ? t('hosts.preview.password') : t('hosts.preview.nokey') }),
          );
        if (parsed.warnings.length) {
          const ul = el('ul', { class: 'warnings' });
          for (const w of parsed.warnings) ul.append(el('li', { 'data-kind': w.kind, text: warningText(w) }));
          preview.append(ul);
        }
      } catch (e) {
        preview.append(el('p', { class: 'bad-text', text: t(`error.${/** @type {ErrorPayload} */ (e).code}`) }));
      }
    }),
  );

  // The list is drawn again on each refresh: what a drawing started ends with it.
  const listDrawn = redraws(signal);
  async function refresh() {
    try {
      const hosts = await hostList();
      if (!signal.aborted) renderList(list, hosts, status, refresh, listDrawn());
    } catch (e) {
      if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    }
  }

  const addCancel = /** @type {HTMLButtonElement} */ (
    el('button', {
      type: 'button',
      id: 'host-add-cancel',
      class: 'danger ghost',
      text: t('hosts.cancel'),
      hidden: true,
    })
  );

  /** Show an add that runs (also one started before this screen was drawn) with its Cancel. @param {ops.RunningOp} op */
  function showAdding(op) {
    add.disabled = true;
    addCancel.hidden = false;
    addCancel.disabled = op.stopping;
    addCancel.onclick = () => {
      addCancel.disabled = true;
      ops.cancel(op);
    };
    status.textContent = t('hosts.adding');
    op.done.then(() => {
      if (signal.aborted) return;
      add.disabled = false;
      addCancel.hidden = true;
    });
  }

  /** @param {string[]} trust */
  async function connect(trust) {
    const req = {
      text: paste.value,
      label: label.value.trim() || null,
      key_label: keySel.value || null,
      trust,
      disable_password_login: harden.checked,
    };
    const { op, result } = ops.start('host_add', '', {}, (on) => hostAdd(req, on));
    showAdding(op);
    try {
      const out = await result;
      if (signal.aborted) return;
      hideError();
      prompt.hidden = true;
      paste.value = ''; // the pasted password is gone from the page too
      clear(preview);
      const l = out.host.label;
      status.textContent = out.install
        ? out.install.outcome === 'added'
          ? t('hosts.installed', { label: l })
          : t('hosts.installed.already', { label: l })
        : t('hosts.added', { label: l });
      await refresh();
    } catch (e) {
      const err = /** @type {ErrorPayload} */ (e);
      if (signal.aborted) return showError(err);
      status.textContent = '';
      const fp = err.data?.fingerprint;
      if (err.code === 'host_key_unknown' && fp) {
        showPrompt(prompt, hopText(err.data, parsed ? target(parsed) : ''), fp, () => connect([...trust, fp]));
      } else if (err.code === 'cancelled') {
        status.textContent = t('hosts.add.cancelled');
      } else {
        showError(err);
      }
    }
  }
  add.addEventListener('click', () => connect([]));
  for (const op of ops.running('host_add')) {
    showAdding(op);
    op.done.then(() => {
      if (!signal.aborted) refresh();
    });
  }

  root.append(
    el('h1', { text: t('hosts.title') }),
    el('p', { class: 'lead', text: t('hosts.intro') }),
    rented,
    el(
      'div',
      { class: 'card wide' },
      el('h2', { text: t('hosts.add') }),
      el('label', { class: 'field', for: 'host-paste' }, el('span', { text: t('hosts.paste') }), paste),
      preview,
      el(
        'div',
        { class: 'form-row' },
        el('label', { class: 'field', for: 'host-label' }, el('span', { text: t('hosts.label') }), label),
        el('label', { class: 'field', for: 'host-key' }, el('span', { text: t('hosts.key') }), keySel),
      ),
      el('label', { class: 'check' }, harden, el('span', { text: t('hosts.harden') })),
      el('p', { class: 'muted small', text: t('hosts.harden.hint') }),
      el('div', { class: 'row' }, add, addCancel),
      prompt,
    ),
    status,
    list,
  );
  // Rented machines (a provider's list is read over the network: it does not hold up the rest).
  renderRented(rented, signal).catch((e) => showError(/** @type {ErrorPayload} */ (e)));
  rented.addEventListener('rent-finished', () => {
    refresh();
  });
  rented.addEventListener('machines-closed', () => {
    refresh();
  });
  await refresh();
}

/**
 * The first-contact question: show the fingerprint; continue only when the user trusts it.
 * @param {HTMLElement} box
 * @param {string} who
 * @param {string} fp
 * @param {() => void} onTrust
 */
function showPrompt(box, who, fp, onTrust) {
  clear(box);
  const trust = el('button', { type: 'button', id: 'hostkey-trust', class: 'primary', text: t('hosts.prompt.trust') });
  const cancel = el('button', { type: 'button', id: 'hostkey-cancel', text: t('hosts.prompt.cancel') });
  trust.addEventListener('click', onTrust);
  cancel.addEventListener('click', () => {
    box.hidden = true;
  });
  box.append(
    el('h3', { text: t('hosts.prompt.title') }),
    el('p', { id: 'hostkey-hop', text: t('hosts.prompt.body', { target: who }) }),
    el('code', { id: 'hostkey-fingerprint', class: 'fingerprint big-fp', text: fp }),
    el('div', { class: 'row' }, trust, cancel),
  );
  box.hidden = false;
}

/** @param {HostCheck | null} c */
function lastCheckText(c) {
  if (!c) return t('hosts.never');
  const when = new Date(c.checked_ms).toLocaleString(language());
  const result = c.key_login_ok ? t('hosts.last.ok', { ms: Math.round(c.latency_ms ?? 0) }) : t('hosts.last.bad');
  return t('hosts.last', { when, result });
}

/**
 * @param {HTMLElement} list
 * @param {Host[]} hosts
 * @param {HTMLElement} status
 * @param {() => Promise<void>} refresh
 * @param {AbortSignal} signal this drawing of the list (aborts when it is drawn again or the screen goes)
 */
function renderList(list, hosts, status, refresh, signal) {
  clear(list);
  if (hosts.length === 0) {
    list.append(el('p', { class: 'muted', id: 'host-empty', text: t('hosts.empty') }));
    return;
  }
  for (const h of hosts) {
    if (h.released_ms !== null) {
      list.append(releasedCard(h, refresh));
      continue;
    }
    const line = el('p', { class: 'check-line', 'data-host': h.label, text: lastCheckText(h.last_check) });
    const extra = el('div', { class: 'host-extra' });
    const check = /** @type {HTMLButtonElement} */ (
      el('button', { type: 'button', class: 'check primary', 'data-host': h.label, text: t('hosts.check') })
    );
    const stop = /** @type {HTMLButtonElement} */ (
      el('button', {
        type: 'button',
        class: 'check-cancel danger ghost',
        'data-host': h.label,
        text: t('hosts.cancel'),
        hidden: true,
      })
    );
    /** @param {ops.RunningOp} op */
    const checking = (op) => {
      check.disabled = true;
      stop.hidden = false;
      stop.disabled = op.stopping;
      stop.onclick = () => {
        stop.disabled = true;
        ops.cancel(op);
      };
      line.dataset.ok = '';
      line.textContent = t('hosts.checking');
      op.done.then(() => {
        check.disabled = false;
        stop.hidden = true;
      });
    };
    for (const op of ops.running('host_check', h.label)) {
      checking(op);
      op.done.then(() => {
        if (!signal.aborted) refresh();
      });
    }
    check.addEventListener('click', async () => {
      clear(extra);
      const { op, result } = ops.start('host_check', h.label, {}, (on) => hostCheck(h.label, on));
      checking(op);
      try {
        const c = await result;
        if (signal.aborted) return;
        hideError();
        line.textContent = c.key_login_ok
          ? t('hosts.check.ok', { ms: Math.round(c.latency_ms ?? 0) })
          : t('hosts.check.nokey', { problem: c.key_login_problem ? t(`error.${c.key_login_problem}`) : '?' });
        line.dataset.ok = String(c.key_login_ok);
      } catch (e) {
        const err = /** @type {ErrorPayload} */ (e);
        if (signal.aborted) return showError(err);
        line.dataset.ok = 'false';
        line.textContent = t(`error.${err.code}`);
        if (err.code === 'host_key_changed' && err.data?.fingerprint) changed(extra, h, err, status, refresh);
        else if (err.code !== 'cancelled') showError(err);
      }
    });
    // Every step names the next one: a saved host goes on to Setup, one click away.
    const toSetup = el('button', {
      type: 'button',
      class: 'next-setup',
      'data-host': h.label,
      'data-route': 'setup',
      text: t('hosts.next.setup'),
    });
    toSetup.addEventListener('click', () => setupOn(h.label));
    const config = el('button', {
      type: 'button',
      class: 'sshconfig',
      'data-host': h.label,
      text: t('hosts.sshconfig'),
    });
    config.addEventListener('click', async () => {
      clear(extra);
      try {
        const r = await hostSshConfig(h.label);
        extra.append(
          el('p', {
            class: 'small',
            text: t('hosts.sshconfig.done', { alias: r.alias, path: r.config_path, cmd: r.ssh_command }),
          }),
        );
        if (r.backup_path)
          extra.append(el('p', { class: 'muted small', text: t('hosts.sshconfig.backup', { path: r.backup_path }) }));
        extra.append(
          el('p', {
            class: 'muted small',
            text: r.agent_running
              ? t('hosts.sshconfig.agent')
              : `${t('hosts.sshconfig.noagent.short')} ${t(`agent.hint.${r.agent_hint}`)}`,
          }),
        );
        if (!r.agent_running && h.key_label) extra.append(exportBox(h.key_label, status));
        extra.append(
          el(
            'p',
            { class: 'small' },
            el('span', { class: 'muted', text: `${t('hosts.vscode')}: ` }),
            el('code', { class: 'vscode-uri', text: r.vscode_uri }),
          ),
        );
      } catch (e) {
        showError(/** @type {ErrorPayload} */ (e));
      }
    });
    const term = el('button', { type: 'button', class: 'terminal', 'data-host': h.label, text: t('hosts.terminal') });
    term.addEventListener('click', async () => {
      try {
        status.textContent = openedText(await hostOpenTerminal(h.label));
      } catch (e) {
        showError(/** @type {ErrorPayload} */ (e));
      }
    });
    const code = el('button', { type: 'button', class: 'vscode', 'data-host': h.label, text: t('hosts.vscode.open') });
    code.addEventListener('click', async () => {
      try {
        status.textContent = openedText(await hostOpenVscode(h.label));
      } catch (e) {
        showError(/** @type {ErrorPayload} */ (e));
      }
    });
    const copy = el('button', { type: 'button', text: t('hosts.copycmd') });
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText(sshCommand(h));
        status.textContent = t('hosts.copied');
      } catch {
        status.textContent = sshCommand(h);
      }
    });
    const del = el('button', { type: 'button', class: 'danger ghost', text: t('hosts.delete') });
    del.addEventListener('click', () => {
      clear(extra);
      const yes = el('button', {
        type: 'button',
        class: 'danger',
        id: `host-delete-yes-${h.label}`,
        text: t('hosts.delete'),
      });
      const no = el('button', { type: 'button', text: t('hosts.cancel') });
      yes.addEventListener('click', () => forgetHost(h.label, refresh));
      no.addEventListener('click', () => clear(extra));
      extra.append(
        el(
          'div',
          { class: 'confirm' },
          el('span', { text: t('hosts.delete.confirm', { label: h.label }) }),
          ' ',
          yes,
          ' ',
          no,
        ),
      );
    });
    const pinned = h.host_keys.map((k) => `${k.key_type} ${k.fingerprint}`).join(' · ');
    list.append(
      el(
        'div',
        { class: 'card wide host', 'data-host': h.label },
        el('div', { class: 'row' }, el('strong', { text: h.label }), el('code', { text: sshCommand(h) })),
        el(
          'p',
          { class: 'small' },
          el('span', { class: 'muted', text: `${t('hosts.pinned')}: ` }),
          el('code', { class: 'fingerprint', text: pinned }),
        ),
        h.key_label ? el('p', { class: 'muted small', text: t('hosts.with_key', { key: h.key_label }) }) : null,
        line,
        el('div', { class: 'row' }, check, stop, toSetup, config, term, code, copy, del),
        extra,
      ),
    );
  }
}

/**
 * Forget a saved host (its pins and its ~/.ssh/config block), then redraw the list.
 * @param {string} label @param {() => Promise<void>} refresh
 */
async function forgetHost(label, refresh) {
  try {
    await hostDelete(label);
    await refresh();
  } catch (e) {
    showError(/** @type {ErrorPayload} */ (e));
  }
}

/**
 * A rented machine that was released: no check, terminal or config (nothing connects to it, its
 * address may be someone else's machine by now), only Forget.
 * @param {Host} h
 * @param {() => Promise<void>} refresh
 */
function releasedCard(h, refresh) {
  const forget = el('button', {
    type: 'button',
    class: 'forget danger ghost',
    'data-host': h.label,
    text: t('hosts.released.forget'),
  });
  forget.addEventListener('click', () => forgetHost(h.label, refresh));
  const at = new Date(Number(h.released_ms)).toLocaleString(language());
  return el(
    'div',
    { class: 'card wide host released', 'data-host': h.label, 'data-released': 'true' },
    el(
      'div',
      { class: 'row' },
      el('strong', { text: h.label }),
      el('span', { class: 'badge', text: t('hosts.released.badge') }),
    ),
    el('p', { class: 'small released-line', text: t('hosts.released.line', { at }) }),
    el('div', { class: 'row' }, forget),
  );
}

/**
 * No ssh-agent: offer the explicit, warned export of the private key to a new owner-only file.
 * @param {string} keyLabel
 * @param {HTMLElement} status
 */
function exportBox(keyLabel, status) {
  const path = /** @type {HTMLInputElement} */ (
    el('input', { type: 'text', id: 'key-export-path', placeholder: t(`hosts.export.placeholder.${platform()}`) })
  );
  const ack = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', id: 'key-export-ack' }));
  const go = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', class: 'danger', id: 'key-export', text: t('hosts.export.button'), disabled: true })
  );
  ack.addEventListener('change', () => {
    go.disabled = !ack.checked;
  });
  go.addEventListener('click', async () => {
    try {
      const written = await keyExportPrivate(keyLabel, path.value.trim(), ack.checked);
      status.textContent = t('hosts.export.done', { path: written });
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
    }
  });
  return el(
    'details',
    { class: 'prompt bad' },
    el('summary', { text: t('hosts.export.title') }),
    el('p', { class: 'small', text: t('hosts.export.warning') }),
    el(
      'div',
      { class: 'form-row' },
      el('label', { class: 'field grow' }, el('span', { text: t('hosts.export.path') }), path),
    ),
    el('label', { class: 'check' }, ack, el('span', { text: t('hosts.export.ack') })),
    go,
  );
}

/**
 * A changed host key: explain, and offer the explicit re-pin.
 * @param {HTMLElement} box
 * @param {Host} h
 * @param {ErrorPayload} err
 * @param {HTMLElement} status
 * @param {() => Promise<void>} refresh
 */
function changed(box, h, err, status, refresh) {
  const d = err.data;
  const [oldFp, newFp] = [d?.expected_fingerprint ?? '?', d?.fingerprint ?? '?'];
  const repin = el('button', { type: 'button', class: 'danger', id: `host-repin-${h.label}`, text: t('hosts.repin') });
  repin.addEventListener('click', async () => {
    try {
      await hostRepin(h.label, newFp);
      status.textContent = t('hosts.repinned', { label: h.label });
      await refresh();
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
    }
  });
  box.append(
    el(
      'div',
      { class: 'prompt bad', id: `host-changed-${h.label}` },
      el('h3', { text: t('hosts.changed.title') }),
      el('p', { class: 'small', 'data-role': d?.role ?? 'target', text: hopText(d, sshCommand(h)) }),
      el('p', { text: t('hosts.changed.body', { old: oldFp, new: newFp }) }),
      repin,
    ),
  );
}
