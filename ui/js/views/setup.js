// Step 4, Setup: probe the host in one round trip, show each step's state and the findings with
// their evidence, run a fix with live output (cancellable), re-check, and verify on the GPU.
import { setupFix, setupProbe, setupVerify, hostList, opCancel } from '../api.js';
import { hideError, showError } from '../banner.js';
import { clear, el } from '../dom.js';
import { num, t } from '../i18n.js';

/** @typedef {import('../../bindings/Finding').Finding} Finding */
/** @typedef {import('../../bindings/Report').Report} Report */
/** @typedef {import('../../bindings/HostVerify').HostVerify} HostVerify */
/** @typedef {import('../../bindings/Progress').Progress} Progress */
/** @typedef {import('../../bindings/FixNote').FixNote} FixNote */
/** @typedef {import('../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
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

/** @param {HTMLElement} root */
export async function renderSetup(root) {
  const hosts = await hostList().catch((e) => {
    showError(/** @type {ErrorPayload} */ (e));
    return [];
  });
  root.append(el('h1', { text: t('setup.title') }), el('p', { class: 'lead', text: t('setup.intro') }));
  if (hosts.length === 0) {
    root.append(el('p', { class: 'card', id: 'setup-nohosts', text: t('setup.nohosts') }));
    return;
  }
  if (!state.host || !hosts.some((h) => h.label === state.host)) state.host = hosts[0].label;
  const hostSel = /** @type {HTMLSelectElement} */ (el('select', { id: 'setup-host' }));
  for (const h of hosts) hostSel.append(el('option', { value: h.label, text: `${h.label} — ${h.user}@${h.address}:${h.port}`, selected: h.label === state.host }));
  const run = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', id: 'setup-run', class: 'primary', text: state.report ? t('setup.recheck') : t('setup.run') }));
  const verify = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', id: 'setup-verify', text: t('setup.verify'), disabled: state.report?.verdict.status !== 'ready' }));
  const steps = el('ol', { id: 'setup-steps', class: 'steps' });
  const verdict = el('p', { id: 'setup-verdict', class: 'verdict' });
  const findings = el('div', { id: 'setup-findings' });
  const line = el('p', { id: 'setup-line', class: 'muted', role: 'status' });
  const bar = /** @type {HTMLProgressElement} */ (el('progress', { id: 'setup-progress', hidden: true }));
  const log = el('pre', { id: 'setup-log', class: 'log', hidden: true });

  const draw = () => {
    clear(steps);
    for (const s of STEPS) steps.append(el('li', { 'data-step': s, class: state.steps[s] }, el('span', { class: 'dot' }), el('span', { text: t(`setup.step.${s}`) }), el('span', { class: 'muted small', text: ` ${t(`setup.state.${state.steps[s]}`)}` })));
    clear(verdict);
    clear(findings);
    const r = state.report;
    if (r) {
      const v = r.verdict;
      verdict.dataset.status = v.status;
      verdict.textContent = v.status === 'blocked' ? t(`setup.verdict.blocked.${v.needs}`) : t(`setup.verdict.${v.status}`);
      for (const f of r.findings) findings.append(findingCard(f, fix));
    }
    if (state.verify) findings.prepend(verifyCard(state.verify));
    run.textContent = state.report ? t('setup.recheck') : t('setup.run');
    verify.disabled = state.report?.verdict.status !== 'ready';
  };

  /** @param {Progress} p */
  const onProgress = (p) => {
    if (p.kind === 'log') {
      log.hidden = false;
      log.append(`${p.line}\n`);
      log.scrollTop = log.scrollHeight;
    } else if (p.kind === 'bytes') {
      bar.hidden = false;
      if (p.total_bytes) { bar.max = p.total_bytes; bar.value = p.done_bytes; } else bar.removeAttribute('value');
      line.textContent = `${t('setup.fix.running')} ${num(p.done_bytes / 1048576, 0)} MiB${p.total_bytes ? ` / ${num(p.total_bytes / 1048576, 0)} MiB` : ''}`;
    } else if (p.kind === 'started') {
      currentOp = p.op_id;
    }
  };
  /** @type {string | null} */
  let currentOp = null;

  async function probe() {
    run.disabled = true;
    state.steps = Object.fromEntries(STEPS.map((s) => [s, /** @type {StepState} */ ('running')]));
    state.steps.verify = 'pending';
    draw();
    line.textContent = t('setup.running');
    try {
      const r = await setupProbe(hostSel.value, onProgress);
      hideError();
      state.report = r;
      state.steps = stepStates(r);
      line.textContent = '';
    } catch (e) {
      state.steps = { ...state.steps, connect: 'fail' };
      for (const s of ['gpu_driver', 'cuda', 'python', 'pytorch']) state.steps[s] = 'pending';
      line.textContent = '';
      showError(/** @type {ErrorPayload} */ (e));
    } finally {
      run.disabled = false;
      draw();
    }
  }

  /** @param {Finding} f @param {HTMLButtonElement} button */
  async function fix(f, button) {
    button.disabled = true;
    const stop = el('button', { type: 'button', id: 'setup-fix-stop', class: 'danger', text: t('setup.fix.stop') });
    stop.addEventListener('click', () => { if (currentOp) opCancel(currentOp).catch(() => {}); });
    button.after(stop);
    clear(log);
    log.hidden = false;
    line.textContent = t('setup.fix.running');
    try {
      const done = await setupFix(hostSel.value, f.code, onProgress);
      hideError();
      line.textContent = t('setup.fix.done');
      bar.hidden = true;
      state.report = done.after; // the fix ends with a re-probe
      state.steps = stepStates(done.after);
      draw();
    } catch (e) {
      showError(/** @type {ErrorPayload} */ (e));
      line.textContent = '';
    } finally {
      stop.remove();
      button.disabled = false;
      currentOp = null;
    }
  }

  run.addEventListener('click', probe);
  hostSel.addEventListener('change', () => {
    state.host = hostSel.value;
    state.report = null;
    state.verify = null;
    state.steps = Object.fromEntries(STEPS.map((s) => [s, /** @type {StepState} */ ('pending')]));
    draw();
  });
  verify.addEventListener('click', async () => {
    verify.disabled = true;
    state.steps.verify = 'running';
    draw();
    line.textContent = t('setup.verifying');
    try {
      state.verify = await setupVerify(hostSel.value, onProgress);
      state.steps.verify = state.verify.ok && state.verify.gpus.every((g) => g.suspicions.every((x) => x.key === 'unknown_card')) ? 'ok' : 'warn';
      line.textContent = '';
    } catch (e) {
      state.steps.verify = 'fail';
      showError(/** @type {ErrorPayload} */ (e));
    } finally {
      draw();
    }
  });

  root.append(
    el('div', { class: 'card wide' },
      el('div', { class: 'form-row' }, el('label', { class: 'field', for: 'setup-host' }, el('span', { text: t('setup.host') }), hostSel), run, verify),
      steps, verdict, line, bar),
    findings,
    el('details', { class: 'card wide', open: true }, el('summary', { text: t('setup.log') }), log),
  );
  draw();
}

/** The sentence for a finding; some codes read differently in a milder case. @param {Finding} f */
function findingKey(f) {
  if (f.code === 'driver_too_old_for_torch' && f.minor_version_compat) return 'find.driver_too_old_for_torch.compat';
  return `find.${f.code}`;
}

/**
 * @param {Finding} f
 * @param {(f: Finding, b: HTMLButtonElement) => void} onFix
 */
function findingCard(f, onFix) {
  const card = el('div', { class: `card wide finding sev-${f.severity}`, 'data-code': f.code },
    el('p', { class: 'finding-title', text: t(findingKey(f), params(f)) }));
  if (f.evidence.length) {
    card.append(el('details', { class: 'evidence' }, el('summary', { text: t('setup.evidence') }), el('pre', { text: f.evidence.join('\n') })));
  }
  if (f.fix) {
    for (const n of f.fix.notes) card.append(el('p', { class: 'muted small', 'data-note': n.key, text: noteText(n) }));
    if (f.fix.commands.length) {
      card.append(el('p', { class: 'muted small', text: t('setup.commands') }), el('pre', { class: 'commands', text: f.fix.commands.join('\n') }));
    }
    if ((f.fix.kind === 'run_here' || f.fix.kind === 'optional') && f.fix.commands.length) {
      const b = /** @type {HTMLButtonElement} */ (el('button', { type: 'button', class: 'primary fix', id: `fix-${f.code}`, text: t('setup.fix.run') }));
      b.addEventListener('click', () => onFix(f, b));
      card.append(b);
    }
  }
  return card;
}

/** @param {import('../../bindings/Suspicion').Suspicion} x */
function suspicionText(x) {
  const { key, ...rest } = x;
  /** @type {Record<string, string | number>} */
  const p = {};
  for (const [k, v] of Object.entries(rest)) p[k] = typeof v === 'number' ? num(k === 'fraction' ? v * 100 : v, k === 'fraction' ? 0 : 1) : String(v);
  return t(`suspect.${key}`, p);
}

/** @param {HostVerify} v */
function verifyCard(v) {
  const card = el('div', { class: 'card wide verify', id: 'setup-verify-result' });
  for (const g of v.gpus) {
    const base = { gpu: g.name, tflops: num(g.matmul_tflops ?? 0), gbps: num(g.copy_gbps ?? 0, 0), vram: num(g.total_memory_gib ?? 0) };
    const pct = g.matmul_tflops !== null && g.spec_tflops ? num((g.matmul_tflops / g.spec_tflops) * 100, 0) : null;
    card.append(el('p', { 'data-suspect': String(g.suspicions.length > 0), text: pct === null ? t('setup.verify.nospec', base) : t('setup.verify.ok', { ...base, pct }) }));
    for (const x of g.suspicions) card.append(el('p', { class: x.key === 'unknown_card' ? 'muted' : 'bad-text', 'data-suspicion': x.key, text: suspicionText(x) }));
  }
  for (const e of v.errors) card.append(el('p', { class: 'bad-text', text: e }));
  return card;
}
