// Step 4, Setup: probe the host in one round trip, show each step's state and the findings with
// their evidence, run a fix with live output (cancellable), re-check, and verify on the GPU.
import { liveHosts, setupFix, setupProbe, setupVerify } from '../../api.js';
import { hideError, showError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { num, t } from '../../i18n.js';
import * as ops from '../../ops.js';
import { redraws } from '../../screen.js';
import { explainButton, explainPanel } from './explain.js';
import { filesOn } from '../files/files.js';

/** @typedef {import('../../../bindings/Finding').Finding} Finding */
/** @typedef {import('../../../bindings/Report').Report} Report */
/** @typedef {import('../../../bindings/HostVerify').HostVerify} HostVerify */
/** @typedef {import('../../../bindings/Progress').Progress} Progress */
/** @typedef {import('../../../bindings/FixNote').FixNote} FixNote */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {'pending' | 'running' | 'ok' | 'warn' | 'fail'} StepState */

const STEPS = /** @type {const} */ (['connect', 'gpu_driver', 'cuda', 'python', 'pytorch', 'verify']);

/** Screen state, kept across language switches. */
const state = {
  /** @type {string | null} */
  host: null,
  /** @type {Report | null} */
  report: null,
  /** @type {HostVerify | null} */
  verify: null,
  /** @type {Record<string, StepState>} */
  steps: Object.fromEntries(STEPS.map((s) => [s, /** @type {StepState} */ ('pending')])),
};

/**
 * Open Setup on this host next time the screen is drawn (a freshly rented machine).
 * @param {string} label
 */
export function setupOn(label) {
  if (state.host !== label) {
    state.host = label;
    state.report = null;
    state.verify = null;
  }
}

/** Params of a finding for its sentence: every field but the shared ones. @param {Finding} f */
function params(f) {
  /** @type {Record<string, string | number>} */
  const out = {};
  for (const [k, v] of Object.entries(f)) {
    if (['severity', 'step', 'evidence', 'fix', 'message', 'code'].includes(k)) continue;
    out[k] = v === null ? '?' : Array.isArray(v) ? v.join(', ') : typeof v === 'boolean' ? String(v) : v;
  }
  return out;
}

/** @param {FixNote} n */
function noteText(n) {
  const { key, ...rest } = n;
  // A driver branch is worded by its lifecycle (long-term, production, new-feature, unknown).
  const k = n.key === 'driver_branch' ? `note.driver_branch.${n.lifecycle}` : `note.${key}`;
  return t(k, /** @type {Record<string, string | number>} */ (rest));
}

/** Each step's state from the findings (the worst severity wins). @param {Report} r */
function stepStates(r) {
  /** @type {Record<string, StepState>} */
  const s = { ...state.steps, connect: 'ok' };
  for (const step of ['gpu_driver', 'cuda', 'python', 'pytorch']) s[step] = 'ok';
  for (const f of r.findings) {
    const step = f.step === 'host' ? 'connect' : f.step;
    const next = f.severity === 'error' ? 'fail' : f.severity === 'warning' ? 'warn' : 'ok';
    const rank = { pending: 0, running: 0, ok: 1, warn: 2, fail: 3 };
    if (rank[next] > rank[s[step]]) s[step] = next;
  }
  return s;
}

/** What a running operation of this screen is called on its line. */
const RUNNING_LINE = { probe: 'setup.running', fix: 'setup.fix.running', verify: 'setup.verifying' };

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderSetup(root, signal) {
  const hosts = await liveHosts().catch((e) => {
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    return [];
  });
  if (signal.aborted) return;
  root.append(el('h1', { text: t('setup.title') }), el('p', { class: 'lead', text: t('setup.intro') }));
  if (hosts.length === 0) {
    root.append(el('p', { class: 'card', id: 'setup-nohosts', text: t('setup.nohosts') }));
    return;
  }
  if (!state.host || !hosts.some((h) => h.label === state.host)) state.host = hosts[0].label;
  const hostSel = /** @type {HTMLSelectElement} */ (el('select', { id: 'setup-host' }));
  for (const h of hosts)
    hostSel.append(
      el('option', {
        value: h.label,
        text: `${h.label} — ${h.user}@${h.address}:${h.port}`,
        selected: h.label === state.host,
      }),
    );
  const run = /** @type {HTMLButtonElement} */ (
    el('button', {
      type: 'button',
      id: 'setup-run',
      class: 'primary',
      text: state.report ? t('setup.recheck') : t('setup.run'),
    })
  );
  const verify = /** @type {HTMLButtonElement} */ (
    el('button', {
      type: 'button',
      id: 'setup-verify',
      text: t('setup.verify'),
      disabled: state.report?.verdict.status !== 'ready',
    })
  );
  const stop = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'setup-cancel', class: 'danger ghost', text: t('setup.cancel'), hidden: true })
  );
  const steps = el('ol', { id: 'setup-steps', class: 'steps' });
  const verdict = el('p', { id: 'setup-verdict', class: 'verdict' });
  const findings = el('div', { id: 'setup-findings' });
  // Every step names the next one: a ready host goes on to Files or Run, one click away.
  const toFiles = el('button', {
    type: 'button',
    id: 'setup-next-files',
    'data-route': 'files',
    text: t('setup.next.files'),
  });
  toFiles.addEventListener('click', () => filesOn(hostSel.value));
  const toRun = el('button', {
    type: 'button',
    id: 'setup-next-run',
    'data-route': 'monitor',
    text: t('setup.next.run'),
  });
  const next = el('div', { id: 'setup-next', class: 'row', hidden: true }, toFiles, toRun);
  const line = el('p', { id: 'setup-line', class: 'muted', role: 'status' });
  const bar = /** @type {HTMLProgressElement} */ (el('progress', { id: 'setup-progress', hidden: true }));
  const log = el('pre', { id: 'setup-log', class: 'log', hidden: true });
  // A failed fix's log, explained on request.
  const logExplain = el('div', { id: 'setup-log-explain' });
  // Following one operation at a time: following another (or another host) ends the last.
  const following = redraws(signal);
  /** The operation running for the chosen host, if any (probe, fix or verify). */
  const current = () => ['probe', 'fix', 'verify'].flatMap((k) => ops.running(k, hostSel.value))[0];

  const draw = () => {
    clear(steps);
    for (const s of STEPS)
      steps.append(
        el(
          'li',
          { 'data-step': s, class: state.steps[s] },
          el('span', { class: 'dot' }),
          el('span', { text: t(`setup.step.${s}`) }),
          el('span', { class: 'muted small', text: ` ${t(`setup.state.${state.steps[s]}`)}` }),
        ),
      );
    clear(verdict);
    clear(findings);
    const r = state.report;
    if (r) {
      const v = r.verdict;
      verdict.dataset.status = v.status;
      verdict.textContent =
        v.status === 'blocked' ? t(`setup.verdict.blocked.${v.needs}`) : t(`setup.verdict.${v.status}`);
      for (const f of r.findings) findings.append(findingCard(f, fix));
    }
    next.hidden = r?.verdict.status !== 'ready';
    if (state.verify) findings.prepend(verifyCard(state.verify));
    run.textContent = state.report ? t('setup.recheck') : t('setup.run');
    const busy = current();
    run.disabled = Boolean(busy);
    verify.disabled = Boolean(busy) || state.report?.verdict.status !== 'ready';
    for (const b of findings.querySelectorAll('button.fix'))
      /** @type {HTMLButtonElement} */ (b).disabled = Boolean(busy);
  };

  /** @param {Progress} p */
  const onProgress = (p) => {
    if (p.kind === 'log') {
      log.hidden = false;
      log.append(`${p.line}\n`);
      log.scrollTop = log.scrollHeight;
    } else if (p.kind === 'bytes') {
      bar.hidden = false;
      if (p.total_bytes) {
        bar.max = p.total_bytes;
        bar.value = p.done_bytes;
      } else bar.removeAttribute('value');
      line.textContent = `${t('setup.fix.running')} ${num(p.done_bytes / 1048576, 0)} MiB${p.total_bytes ? ` / ${num(p.total_bytes / 1048576, 0)} MiB` : ''}`;
    }
  };

  /** Show a running operation (also one started before this screen was drawn): its line, its output so far, its Stop. @param {ops.RunningOp} op */
  const follow = (op) => {
    stop.hidden = false;
    stop.disabled = op.stopping;
    stop.textContent = op.kind === 'fix' ? t('setup.fix.stop') : t('setup.cancel');
    stop.onclick = () => {
      stop.disabled = true;
      ops.cancel(op);
    };
    line.textContent = t(
      /** @type {'probe' | 'fix' | 'verify'} */ (op.kind) in RUNNING_LINE
        ? RUNNING_LINE[/** @type {'probe' | 'fix' | 'verify'} */ (op.kind)]
        : 'setup.running',
    );
    if (op.kind === 'fix') {
      clear(log);
      clear(logExplain);
      log.hidden = false;
    }
    const followed = following();
    ops.attach(op, followed, onProgress);
    op.done.then(() => {
      if (followed.aborted) return;
      stop.hidden = true;
      bar.hidden = true;
      draw();
    });
    draw();
  };

  /**
   * Start an operation on the chosen host and handle its outcome in the screen state (kept when
   * the user looks at another step meanwhile).
   * @template T
   * @param {'probe' | 'fix' | 'verify'} kind
   * @param {(host: string, on: (p: Progress) => void) => Promise<T>} call
   * @param {(r: T) => void} ok
   * @param {() => void} failed
   */
  function launch(kind, call, ok, failed) {
    const host = hostSel.value;
    const { op, result } = ops.start(kind, host, {}, (on) => call(host, on));
    follow(op);
    result
      .then(
        (r) => {
          if (state.host !== host) return;
          hideError();
          ok(r);
        },
        (e) => {
          const err = /** @type {ErrorPayload} */ (e);
          if (state.host === host) failed();
          if (err.code === 'cancelled') {
            if (!signal.aborted) line.textContent = t('setup.cancelled');
          } else showError(err);
        },
      )
      .finally(() => {
        if (signal.aborted) return;
        if (line.textContent === t(RUNNING_LINE[kind])) line.textContent = '';
        draw();
      });
  }

  function probe() {
    state.steps = Object.fromEntries(STEPS.map((s) => [s, /** @type {StepState} */ ('running')]));
    state.steps.verify = 'pending';
    launch(
      'probe',
      setupProbe,
      (r) => {
        state.report = r;
        state.steps = stepStates(r);
      },
      () => {
        state.steps = { ...state.steps, connect: 'fail' };
        for (const s of ['gpu_driver', 'cuda', 'python', 'pytorch']) state.steps[s] = 'pending';
      },
    );
  }

  /** @param {Finding} f */
  function fix(f) {
    launch(
      'fix',
      (host, on) => setupFix(host, f.code, on),
      (done) => {
        if (!signal.aborted) line.textContent = t('setup.fix.done');
        state.report = done.after; // the fix ends with a re-probe
        state.steps = stepStates(done.after);
      },
      () => {
        if (!signal.aborted && log.textContent)
          logExplain.append(explainButton(() => log.textContent ?? '', hostSel.value));
      },
    );
  }

  /** Run a Setup fix named by an explanation (on its host). @param {string} label @param {string} code */
  const fixFromExplain = (label, code) => {
    hostSel.value = label;
    state.host = label;
    fix(/** @type {Finding} */ (/** @type {unknown} */ ({ code })));
  };
  run.addEventListener('click', probe);
  hostSel.addEventListener('change', () => {
    state.host = hostSel.value;
    state.report = null;
    state.verify = null;
    state.steps = Object.fromEntries(STEPS.map((s) => [s, /** @type {StepState} */ ('pending')]));
    stop.hidden = true;
    const op = current();
    if (op) follow(op);
    else following(); // stop following the other host's
    draw();
  });
  verify.addEventListener('click', () => {
    state.steps.verify = 'running';
    launch(
      'verify',
      setupVerify,
      (v) => {
        state.verify = v;
        state.steps.verify =
          v.ok && v.gpus.every((g) => g.suspicions.every((x) => x.key === 'unknown_card')) ? 'ok' : 'warn';
      },
      () => {
        state.steps.verify = 'fail';
      },
    );
  });

  root.append(
    el(
      'div',
      { class: 'card wide' },
      el(
        'div',
        { class: 'form-row' },
        el('label', { class: 'field', for: 'setup-host' }, el('span', { text: t('setup.host') }), hostSel),
        run,
        verify,
        stop,
      ),
      steps,
      verdict,
      next,
      line,
      bar,
    ),
    findings,
    el('details', { class: 'card wide', open: true }, el('summary', { text: t('setup.log') }), log, logExplain),
    explainPanel(
      hosts.map((h) => h.label),
      hostSel.value,
      fixFromExplain,
    ),
  );
  draw();
  const op = current();
  if (op) follow(op);
}

/** The sentence for a finding; some codes read differently in a milder case. @param {Finding} f */
function findingKey(f) {
  if (f.code === 'driver_too_old_for_torch' && f.minor_version_compat) return 'find.driver_too_old_for_torch.compat';
  return `find.${f.code}`;
}

/**
 * @param {Finding} f
 * @param {(f: Finding) => void} onFix
 */
function findingCard(f, onFix) {
  const card = el(
    'div',
    { class: `card wide finding sev-${f.severity}`, 'data-code': f.code },
    el('p', { class: 'finding-title', text: t(findingKey(f), params(f)) }),
  );
  if (f.evidence.length) {
    card.append(
      el(
        'details',
        { class: 'evidence' },
        el('summary', { text: t('setup.evidence') }),
        el('pre', { text: f.evidence.join('\n') }),
      ),
    );
  }
  if (f.fix) {
    for (const n of f.fix.notes) card.append(el('p', { class: 'muted small', 'data-note': n.key, text: noteText(n) }));
    if (f.fix.commands.length) {
      card.append(
        el('p', { class: 'muted small', text: t('setup.commands') }),
        el('pre', { class: 'commands', text: f.fix.commands.join('\n') }),
      );
    }
    if ((f.fix.kind === 'run_here' || f.fix.kind === 'optional') && f.fix.commands.length) {
      const b = /** @type {HTMLButtonElement} */ (
        el('button', { type: 'button', class: 'primary fix', id: `fix-${f.code}`, text: t('setup.fix.run') })
      );
      b.addEventListener('click', () => onFix(f));
      card.append(b);
    }
  }
  return card;
}

/** @param {import('../../../bindings/Suspicion').Suspicion} x */
function suspicionText(x) {
  const { key, ...rest } = x;
  /** @type {Record<string, string | number>} */
  const p = {};
  for (const [k, v] of Object.entries(rest))
    p[k] = typeof v === 'number' ? num(k === 'fraction' ? v * 100 : v, k === 'fraction' ? 0 : 1) : String(v);
  return t(`suspect.${key}`, p);
}

/** @param {HostVerify} v */
function verifyCard(v) {
  const card = el('div', { class: 'card wide verify', id: 'setup-verify-result' });
  for (const g of v.gpus) {
    const base = {
      gpu: g.name,
      tflops: num(g.matmul_tflops ?? 0),
      gbps: num(g.copy_gbps ?? 0, 0),
      vram: num(g.total_memory_gib ?? 0),
    };
    const pct = g.matmul_tflops !== null && g.spec_tflops ? num((g.matmul_tflops / g.spec_tflops) * 100, 0) : null;
    card.append(
      el('p', {
        'data-suspect': String(g.suspicions.length > 0),
        text: pct === null ? t('setup.verify.nospec', base) : t('setup.verify.ok', { ...base, pct }),
      }),
    );
    for (const x of g.suspicions)
      card.append(
        el('p', {
          class: x.key === 'unknown_card' ? 'muted' : 'bad-text',
          'data-suspicion': x.key,
          text: suspicionText(x),
        }),
      );
  }
  // Typed problems are translated by code; the English `errors` are shown (as details) only when
  // the check reported something it has no code for.
  if (v.issues.length > 0) for (const i of v.issues) card.append(verifyIssue(i));
  else for (const e of v.errors) card.append(verifyError(e));
  return card;
}

/** @param {import('../../../bindings/VerifyIssue').VerifyIssue} i */
function verifyIssue(i) {
  const { code, ...rest } = i;
  /** @type {Record<string, string | number>} */
  const p = {};
  for (const [k, v] of Object.entries(rest)) p[k] = typeof v === 'number' ? v : String(v ?? '?');
  return el('p', { class: 'bad-text', 'data-verify-error': code, text: t(`setup.verify.issue.${code}`, p) });
}

/**
 * One problem the GPU check reported, in the user's language: by its code when it has one; the
 * tool's own words (Python's error text, not translatable) only as the detail under a
 * translated sentence.
 * @param {unknown} e
 */
function verifyError(e) {
  if (e && typeof e === 'object' && 'code' in e) {
    const { code, ...rest } = /** @type {{ code: string } & Record<string, unknown>} */ (e);
    /** @type {Record<string, string | number>} */
    const p = {};
    for (const [k, v] of Object.entries(rest)) p[k] = typeof v === 'number' ? v : String(v ?? '');
    return el('p', { class: 'bad-text', 'data-verify-error': code, text: t(`verify.error.${code}`, p) });
  }
  return el(
    'div',
    { class: 'bad-text', 'data-verify-error': 'reported' },
    el('p', { text: t('verify.error.reported') }),
    el('details', {}, el('summary', { text: t('error.details') }), el('code', { text: String(e) })),
  );
}
