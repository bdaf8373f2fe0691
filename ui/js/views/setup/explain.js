// "Explain this error": a field on the Setup step (paste, optional saved host) and an Explain
// button beside remote logs. Each match: code, title, meaning, the matching lines, the likely
// cause (from the host's last Setup check), the fix; "Run this fix" when Setup can run it.
import { explainLog } from '../../api-explain.js';
import { showError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { t } from '../../i18n.js';

/** @typedef {import('../../../bindings/ErrorExplanation').ErrorExplanation} ErrorExplanation */
/** @typedef {import('../../../bindings/ExplainMatch').ExplainMatch} ExplainMatch */
/** @typedef {import('../../../bindings/HostCause').HostCause} HostCause */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {(label: string, code: string) => void} RunFix */

/** @param {string | null | undefined} v */
const q = (v) => v ?? '?';

/** The host-specific sentence, translated. @param {HostCause} h */
function hostCauseText(h) {
  switch (h.key) {
    case 'arch_missing':
      return t(h.torch_has_it ? 'explain.cause.arch_missing_has_it' : 'explain.cause.arch_missing', {
        gpu: q(h.gpu),
        sm: q(h.sm),
        torch: q(h.torch),
        max: q(h.torch_max_sm),
      });
    case 'driver_too_old':
      return t(h.in_container ? 'explain.cause.driver_too_old_container' : 'explain.cause.driver_too_old', {
        driver: q(h.driver),
        driver_cuda: q(h.driver_cuda),
        needs: q(h.needs_cuda),
        min_driver: q(h.min_driver),
      });
    case 'shm_size':
      return t('explain.cause.shm_size', { mib: h.shm_mib });
    case 'gpu_memory':
      return t('explain.cause.gpu_memory', { gpu: q(h.gpu), total: h.total_mib ?? '?', others: h.others_mib });
    case 'host_memory':
      return t('explain.cause.host_memory', { total: h.total_mib, free: h.available_mib ?? '?' });
    case 'disk_free':
      return t('explain.cause.disk_free', { path: h.path, free: h.available_mib, total: h.total_mib });
    case 'torch_build':
      return h.cuda
        ? t('explain.cause.torch_cuda', { torch: h.torch, cuda: h.cuda })
        : t('explain.cause.torch_cpu', { torch: h.torch });
    case 'gpus_visible':
      return t('explain.cause.gpus_visible', { count: h.count, state: h.smi_state });
    case 'driver_state':
      return t('explain.cause.driver_state', { state: h.smi_state, driver: q(h.driver), module: q(h.kernel_module) });
    case 'listens_on':
      return t('explain.cause.listens_on', { address: h.address, port: h.port });
  }
  return '';
}

/**
 * One match as a card.
 * @param {ExplainMatch} m
 * @param {string | null} label the host the answer is for
 * @param {RunFix | null} runFix
 */
function matchCard(m, label, runFix) {
  const key = (/** @type {string} */ part) => `explain.code.${m.code}.${part}`;
  const card = el(
    'div',
    { class: 'card wide finding explain-match', 'data-code': m.code },
    el(
      'p',
      { class: 'finding-title' },
      el('code', { text: m.code }),
      el('span', { text: ` ${t(key('title'))} ` }),
      el('span', {
        class: 'muted small',
        'data-confidence': m.confidence,
        text: `(${t(`explain.confidence.${m.confidence}`)})`,
      }),
    ),
    el('p', { text: t(key('meaning')) }),
  );
  if (m.consequence_of)
    card.append(el('p', { class: 'muted small', text: t('explain.consequence', { code: m.consequence_of }) }));
  card.append(
    el(
      'details',
      { class: 'evidence', open: true },
      el('summary', { text: t('explain.evidence') }),
      el('pre', { text: m.evidence.map((e) => `${t('explain.line', { line: e.line })}: ${e.text}`).join('\n') }),
    ),
  );
  const cause = el('div', { class: 'explain-cause' }, el('p', { class: 'small muted', text: t('explain.cause') }));
  if (m.cause.host) cause.append(el('p', { 'data-host-cause': m.cause.host.key, text: hostCauseText(m.cause.host) }));
  cause.append(el('p', { text: t(key('cause')) }));
  if (m.cause.needs.length)
    cause.append(el('p', { class: 'muted small', text: t('explain.needs', { facts: m.cause.needs.join(', ') }) }));
  card.append(cause, el('p', { class: 'small muted', text: t('explain.fix') }), el('p', { text: t(key('fix')) }));
  if (m.fix.commands.length)
    card.append(
      el('p', { class: 'muted small', text: t('explain.commands') }),
      el('pre', { class: 'commands', text: m.fix.commands.join('\n') }),
    );
  const code = m.fix.setup_code;
  if (code && label && runFix) {
    const b = el('button', {
      type: 'button',
      class: 'primary fix',
      'data-setup-code': code,
      text: t('explain.runfix'),
    });
    b.addEventListener('click', () => runFix(label, code));
    card.append(b);
  }
  if (!m.verified) card.append(el('p', { class: 'muted small', text: t('explain.unverified') }));
  card.append(el('p', { class: 'muted small', text: t('explain.sources', { sources: m.sources.join('; ') }) }));
  return card;
}

/**
 * The whole answer.
 * @param {ErrorExplanation} e
 * @param {RunFix | null} [runFix]
 */
export function explanationView(e, runFix = null) {
  const label = e.host?.label ?? null;
  const box = el('div', { class: 'explain-result', 'data-matches': String(e.matches.length) });
  if (e.host && !e.host.probe_path) box.append(el('p', { class: 'muted small', text: t('explain.noprobe') }));
  for (const m of e.matches) box.append(matchCard(m, label, runFix));
  if (!e.matches.length) {
    box.append(
      el('p', {
        'data-unrecognised': 'true',
        text: t(e.suspicious.length ? 'explain.none' : 'explain.none.empty', { lines: e.lines }),
      }),
    );
    if (e.suspicious.length)
      box.append(
        el('pre', { text: e.suspicious.map((l) => `${t('explain.line', { line: l.line })}: ${l.text}`).join('\n') }),
      );
    if (e.host?.environment)
      box.append(
        el('details', {}, el('summary', { text: t('explain.environment') }), el('pre', { text: e.host.environment })),
      );
  }
  return box;
}

/**
 * The Setup step's field: paste, pick a saved host, explain.
 * @param {string[]} hosts saved host labels
 * @param {string | null} host preselected
 * @param {RunFix} runFix runs a Setup fix on a host
 */
export function explainPanel(hosts, host, runFix) {
  const text = /** @type {HTMLTextAreaElement} */ (
    el('textarea', { id: 'explain-text', rows: '8', spellcheck: 'false' })
  );
  const sel = /** @type {HTMLSelectElement} */ (
    el('select', { id: 'explain-host' }, el('option', { value: '', text: t('explain.host.none') }))
  );
  for (const h of hosts) sel.append(el('option', { value: h, text: h, selected: h === host }));
  const go = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'explain-run', class: 'primary', text: t('explain.run') })
  );
  const out = el('div', { id: 'explain-out', role: 'status' });
  go.addEventListener('click', () => {
    go.disabled = true;
    clear(out);
    out.append(el('p', { class: 'muted', text: t('explain.running') }));
    explainLog(text.value, sel.value || null)
      .then(
        (e) => {
          clear(out);
          out.append(explanationView(e, runFix));
        },
        (err) => {
          clear(out);
          showError(/** @type {ErrorPayload} */ (err));
        },
      )
      .finally(() => {
        go.disabled = false;
      });
  });
  return el(
    'details',
    { class: 'card wide', id: 'explain' },
    el('summary', { text: t('explain.title') }),
    el('p', { class: 'small muted', text: t('explain.intro') }),
    el('label', { class: 'field', for: 'explain-text' }, el('span', { text: t('explain.paste') }), text),
    el(
      'div',
      { class: 'form-row' },
      el('label', { class: 'field', for: 'explain-host' }, el('span', { text: t('explain.host') }), sel),
      go,
    ),
    out,
  );
}

/**
 * An Explain button for a log gpurent shows (a rank's log): the answer appears under it.
 * @param {() => string} log the log's text when clicked
 * @param {string | null} label the host it came from
 */
export function explainButton(log, label) {
  const out = el('div', { class: 'explain-inline' });
  const b = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', class: 'ghost small explain-button', text: t('explain.button') })
  );
  b.addEventListener('click', () => {
    b.disabled = true;
    explainLog(log(), label)
      .then(
        (e) => {
          clear(out);
          out.append(explanationView(e));
        },
        (err) => showError(/** @type {ErrorPayload} */ (err)),
      )
      .finally(() => {
        b.disabled = false;
      });
  });
  return el('div', {}, b, out);
}
