// "Start from a goal": pick a goal (a bundled recipe, in the UI's language), then where it runs —
// a saved host, or a live offer whose host runs one of the recipe's images (ranked for the
// recipe's job; renting states the money first, as the rent dialog does) — then the existing
// steps in order: rent → Setup's check → the app started → ready through the tunnel → the guard
// with the recipe's defaults → Open. A failing step stops the flow there with its own error and
// the Explain button. When done: Stop, and for a rented machine Release, through the release
// checklist with the recipe's result folders. The run lives in ops.js (kind `recipe`), so it
// survives navigation; what it reported is kept here. Text via textContent only (dom.js).
import { keyList, liveHosts, providerList, rentOptions } from '../../api.js';
import { recipeList, recipeOffers, recipeOpen, recipeRun, recipeStop } from '../../api-recipe.js';
import { showError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { errorText, language, t } from '../../i18n.js';
import * as ops from '../../ops.js';
import { listen, redraws } from '../../screen.js';
import { releaseInstance } from '../hosts/rented.js';
import { moneyLines, offerTitle, providerErrorText } from '../hosts/renting.js';
import { money } from '../../money.js';
import { explainButton } from '../setup/explain.js';
import { renderTools } from './tools.js';

/** @typedef {import('../../../bindings/Recipe').Recipe} Recipe */
/** @typedef {import('../../../bindings/RecipeOfferRow').RecipeOfferRow} RecipeOfferRow */
/** @typedef {import('../../../bindings/RecipeTarget').RecipeTarget} RecipeTarget */
/** @typedef {import('../../../bindings/RecipeRunReport').RecipeRunReport} RecipeRunReport */
/** @typedef {import('../../../bindings/ProviderOffer').ProviderOffer} ProviderOffer */
/** @typedef {import('../../../bindings/Progress').Progress} Progress */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */

/**
 * The latest run, kept across screens.
 * @typedef {object} Run
 * @property {number} seq
 * @property {string} name the recipe
 * @property {boolean} rents whether it rents first
 * @property {boolean} rented whether its host is a rented machine (Release applies)
 * @property {string | null} host the host's label (known once rented, or from the start)
 * @property {string} step the flow's step now (`rent`, `setup`, `start`, `ready`, `guard`, `open`)
 * @property {string | null} sub the rent's own step (`offer`, `create`, `wait_ssh`, ...)
 * @property {RecipeRunReport | null} report once the app answered
 * @property {ErrorPayload | null} error the step's own error
 * @property {'running' | 'open' | 'closed' | 'stopped' | 'released' | 'failed'} state
 * @property {import('../../ops.js').RunningOp | null} op
 */

/** @type {string | null} */
let chosen = null;
/** @type {Run | null} */
let run = null;
/** Redraws of the run's part (the screen's, while it is on the page). @type {Set<() => void>} */
const watchers = new Set();
const notify = () => watchers.forEach((w) => w());

/** The flow's steps, in the order the core runs them. */
const FLOW = ['rent', 'setup', 'start', 'ready', 'guard', 'open'];

/** The goal in the UI's language. @param {Recipe} r */
const goalWords = (r) => (language() === 'zh-CN' ? r.goal.zh_cn : r.goal.en);

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderGoal(root, signal) {
  root.append(el('h1', { text: t('goal.title') }), el('p', { class: 'muted', text: t('goal.intro') }));
  const list = el('ul', { class: 'goal-list', id: 'goal-list' });
  const detail = el('div', { id: 'goal-detail' });
  root.append(list, detail);
  /** @type {Recipe[]} */
  let recipes;
  try {
    recipes = await recipeList();
  } catch (e) {
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    return;
  }
  if (signal.aborted) return;
  const detailDrawn = redraws(signal);
  const drawList = () => {
    clear(list);
    for (const r of recipes) {
      const b = el('button', {
        type: 'button',
        class: `goal${chosen === r.name ? ' active' : ''}`,
        'data-recipe': r.name,
        'aria-pressed': chosen === r.name ? 'true' : 'false',
        text: goalWords(r),
      });
      b.addEventListener('click', () => {
        chosen = r.name;
        drawList();
        void drawDetail();
      });
      list.append(el('li', {}, b));
    }
  };
  const drawDetail = async () => {
    const drawn = detailDrawn();
    clear(detail);
    const r = recipes.find((x) => x.name === chosen);
    if (r) await renderRecipe(detail, r, drawn);
  };
  drawList();
  await drawDetail();
}

/**
 * One goal: what it runs, where to run it (until a run starts), and the run.
 * @param {HTMLElement} root @param {Recipe} r @param {AbortSignal} signal
 */
async function renderRecipe(root, r, signal) {
  const images = r.images.map((i) => t('goal.image', { image: i.image, driver: i.min_driver })).join(' · ');
  const section = el(
    'section',
    { class: 'card wide goal-detail', 'data-recipe': r.name },
    el('h2', { text: goalWords(r) }),
    el('p', { class: 'small', id: 'goal-images', text: images }),
  );
  if (r.unverified.length) {
    const what = r.unverified.map((u) => (language() === 'zh-CN' ? u.zh_cn : u.en)).join('; ');
    section.append(el('p', { class: 'muted small', text: t('goal.unverified', { what }) }));
  }
  const runPart = el('div', { id: 'goal-run-part' });
  const where = el('div', { id: 'goal-where' });
  section.append(runPart, where);
  root.append(section);
  const runDrawn = redraws(signal);
  const drawRun = () => {
    const drawn = runDrawn();
    clear(runPart);
    const mine = run && run.name === r.name ? run : null;
    // Where to run: shown until a run of this goal is under way (again once it failed).
    where.hidden = Boolean(mine && mine.state !== 'failed' && mine.state !== 'released');
    if (mine) renderRun(runPart, r, mine, drawn);
  };
  listen(watchers, drawRun, signal);
  drawRun();
  await renderWhere(where, r, signal);
}

/**
 * Where to run: a saved host, or a live offer.
 * @param {HTMLElement} root @param {Recipe} r @param {AbortSignal} signal
 */
async function renderWhere(root, r, signal) {
  const hostPart = el('div', { class: 'goal-hosts' }, el('h3', { text: t('goal.where.host') }));
  const offerPart = el('div', { class: 'goal-offers', id: 'goal-offers' }, el('h3', { text: t('goal.where.offer') }));
  root.append(hostPart, offerPart);
  let hosts, accounts;
  try {
    [hosts, accounts] = await Promise.all([liveHosts(), providerList()]);
  } catch (e) {
    if (!signal.aborted) showError(/** @type {ErrorPayload} */ (e));
    return;
  }
  if (signal.aborted) return;
  if (hosts.length === 0)
    hostPart.append(el('p', { class: 'muted small', id: 'goal-nohosts', text: t('goal.host.none') }));
  else {
    const select = /** @type {HTMLSelectElement} */ (el('select', { id: 'goal-host' }));
    for (const h of hosts) select.append(el('option', { value: h.label, text: `${h.label} (${h.user}@${h.address})` }));
    const go = el('button', { type: 'button', class: 'primary', id: 'goal-run-host', text: t('goal.host.run') });
    go.addEventListener('click', () => {
      const h = hosts.find((x) => x.label === select.value);
      if (h) start(r.name, { type: 'host', label: h.label }, h.label, h.provider !== null);
    });
    hostPart.append(
      el(
        'div',
        { class: 'form-row' },
        el('label', { class: 'field', for: 'goal-host' }, el('span', { text: t('goal.host.label') }), select),
        go,
      ),
    );
  }
  if (accounts.length === 0) {
    offerPart.append(el('p', { class: 'muted small', id: 'goal-noaccount', text: t('goal.offer.noaccount') }));
    return;
  }
  const status = el('p', { class: 'muted small', id: 'goal-offers-status', role: 'status', text: t('live.fetching') });
  offerPart.append(status);
  let view;
  try {
    view = await recipeOffers(r.name);
  } catch (e) {
    if (!signal.aborted) status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
    return;
  }
  if (signal.aborted) return;
  for (const f of view.failed_accounts)
    offerPart.append(
      el('p', {
        class: 'bad-text small',
        'data-account': f.account,
        text: t('live.failed', { account: f.account, why: providerErrorText({ code: f.code, message: f.message }) }),
      }),
    );
  const { rows, host_too_old: old, card_too_small: small } = view.offers;
  status.textContent = rows.length ? t('goal.offer.count', { n: rows.length }) : t('goal.offer.none');
  if (old + small > 0)
    offerPart.append(
      el('p', { class: 'muted small', id: 'goal-offers-hidden', text: t('goal.offer.hidden', { old, small }) }),
    );
  if (rows.length === 0) return;
  const head = el('tr');
  for (const k of ['offer', 'price', 'host', 'image', 'verdict', 'rent'])
    head.append(el('th', { scope: 'col', text: t(`goal.offer.col.${k}`) }));
  const body = el('tbody');
  for (const row of rows) {
    const o = row.offer;
    const rent = el('button', { type: 'button', class: 'primary goal-rent', text: t('live.rent') });
    rent.addEventListener('click', () => confirmRent(r, row));
    body.append(
      el(
        'tr',
        { class: 'offer', 'data-offer': o.offer_id, 'data-provider': o.provider, 'data-image': row.image ?? '' },
        el('td', { text: offerTitle(o) }),
        el('td', { class: 'num', text: `${money(o.price_per_hour_usd, o.currency, 3)}/h` }),
        el('td', {
          class: 'small',
          text: o.host_cuda ? t('live.host_cuda', { cuda: o.host_cuda }) : t('live.host_cuda.vm'),
        }),
        el('td', {}, el('code', { text: row.image ?? t('goal.offer.image.provider') })),
        el('td', { class: 'small', text: row.verdict ? t(`kind.verdict.${row.verdict}`) : t('live.card.unknown') }),
        el('td', {}, rent),
      ),
    );
  }
  offerPart.append(
    el(
      'div',
      { class: 'table-wrap' },
      el('table', { class: 'data', id: 'goal-offers-table' }, el('thead', {}, head), body),
    ),
  );
}

/**
 * The money before anything is created (the rent dialog's lines): the recipe's image and disk,
 * the key, the price now; "Rent" starts the run.
 * @param {Recipe} r @param {RecipeOfferRow} row
 */
async function confirmRent(r, row) {
  const o = row.offer;
  document.getElementById('goal-rent-dialog')?.remove();
  const status = el('p', { class: 'muted small', id: 'goal-rent-status', role: 'status' });
  const body = el('div', {});
  const close = el('button', { type: 'button', id: 'goal-rent-close', text: t('rent.close') });
  const dialog = /** @type {HTMLDialogElement} */ (
    el(
      'dialog',
      { id: 'goal-rent-dialog', class: 'prompt rent-dialog', 'data-offer': o.offer_id },
      el('h3', { text: t('rent.title', { offer: offerTitle(o) }) }),
      body,
      status,
      el('div', { class: 'row end' }, close),
    )
  );
  const done = () => {
    dialog.close();
    dialog.remove();
  };
  close.addEventListener('click', done);
  dialog.addEventListener('cancel', () => dialog.remove());
  document.body.append(dialog);
  dialog.showModal();
  const disk = r.disk.container_gb + r.disk.volume_gb;
  let options, keys;
  try {
    [options, keys] = await Promise.all([rentOptions(o, disk), keyList()]);
  } catch (e) {
    status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
    return;
  }
  const list = el('ul', { class: 'money', id: 'goal-rent-money' });
  for (const [k, text] of moneyLines(o.provider, options, o.gpu_count, o.gpu))
    list.append(el('li', { 'data-money': k, text }));
  const key = /** @type {HTMLSelectElement} */ (el('select', { id: 'goal-rent-key' }));
  for (const k of keys)
    key.append(
      el('option', {
        value: k.label,
        text: `${k.label} (${k.algorithm})${k.has_passphrase ? ` — ${t('rent.key.passphrase')}` : ''}`,
      }),
    );
  const go = /** @type {HTMLButtonElement} */ (
    el('button', {
      type: 'button',
      id: 'goal-rent-create',
      class: 'primary',
      disabled: keys.length === 0,
      text: t('rent.create', { price: money(o.price_per_hour_usd, o.currency, 3) }),
    })
  );
  go.addEventListener('click', () => {
    go.disabled = true;
    done();
    start(
      r.name,
      {
        type: 'rent',
        provider: o.provider,
        offer_id: o.offer_id,
        account: o.account ?? null,
        key_label: key.value,
        // The price the user confirmed is the most they are rented at (refused: price_rose).
        max_price_usd: o.price_per_hour_usd,
      },
      null,
      true,
    );
  });
  body.append(
    el('p', {
      class: 'small',
      id: 'goal-rent-intro',
      text: t('goal.rent.intro', { image: row.image ?? t('goal.offer.image.provider'), disk }),
    }),
    list,
    keys.length
      ? el('label', { class: 'field', for: 'goal-rent-key' }, el('span', { text: t('rent.key') }), key)
      : el('p', { class: 'bad-text', text: t('rent.key.none') }),
    el('div', { class: 'row' }, go),
  );
}

/**
 * Start a run (one at a time: the latest is the one shown).
 * @param {string} name @param {RecipeTarget} target @param {string | null} host @param {boolean} rented
 */
function start(name, target, host, rented) {
  /** @type {Run} */
  const mine = {
    seq: 0,
    name,
    rents: target.type === 'rent',
    rented,
    host,
    step: target.type === 'rent' ? 'rent' : 'setup',
    sub: null,
    report: null,
    error: null,
    state: 'running',
    op: null,
  };
  run = mine;
  const { op, result } = ops.start('recipe', name, {}, (on) =>
    recipeRun(
      name,
      target,
      (p) => {
        on(p);
        if (p.kind === 'step') {
          if (FLOW.includes(p.step)) {
            mine.step = p.step;
            mine.sub = null;
          } else mine.sub = p.step;
          notify();
        }
      },
      (label) => {
        mine.host = label;
        notify();
      },
      (report) => {
        mine.report = report;
        mine.host = report.host;
        mine.step = 'open';
        mine.state = 'open';
        notify();
      },
    ),
  );
  mine.op = op;
  mine.seq = op.seq;
  result
    .then(
      () => {
        if (mine.state === 'open') mine.state = 'closed';
      },
      (/** @type {ErrorPayload} */ e) => {
        if (mine.state === 'stopped' || mine.state === 'released') return;
        mine.error = e;
        if (e.data?.step) mine.step = e.data.step;
        mine.state = 'failed';
      },
    )
    .finally(notify);
  notify();
}

/**
 * The run: its steps, then the error where it stopped, or the app: Open, Stop, Release.
 * @param {HTMLElement} root @param {Recipe} r @param {Run} mine @param {AbortSignal} signal
 */
function renderRun(root, r, mine, signal) {
  const flow = mine.rents ? FLOW : FLOW.slice(1);
  const at = flow.indexOf(mine.step);
  const steps = el('ol', { class: 'steps goal-steps', id: 'goal-steps' });
  flow.forEach((s, i) => {
    let state = i < at ? 'ok' : i === at ? 'running' : 'pending';
    if (mine.report) state = 'ok';
    if (mine.state === 'failed' && i === at) state = 'fail';
    steps.append(
      el(
        'li',
        { 'data-step': s, class: state },
        el('span', { class: 'dot' }),
        el('span', { text: t(`goal.step.${s}`) }),
      ),
    );
  });
  const box = el(
    'section',
    { class: 'goal-run', id: 'goal-run', 'data-state': mine.state },
    el('h3', { text: t('goal.run.title') }),
    steps,
  );
  root.append(box);
  if (mine.state === 'running') {
    if (mine.sub) box.append(el('p', { class: 'muted small', id: 'goal-substep', text: t(`rent.step.${mine.sub}`) }));
    const cancel = /** @type {HTMLButtonElement} */ (
      el('button', {
        type: 'button',
        class: 'danger ghost',
        id: 'goal-cancel',
        text: t('goal.cancel'),
        disabled: mine.op?.stopping,
      })
    );
    cancel.addEventListener('click', () => {
      cancel.disabled = true;
      if (mine.op) ops.cancel(mine.op);
    });
    box.append(el('div', { class: 'row' }, cancel));
    return;
  }
  if (mine.state === 'failed' && mine.error) {
    const e = mine.error;
    const text = mine.step === 'rent' ? providerErrorText(e) : errorText(e);
    box.append(
      el(
        'div',
        { class: 'goal-error', id: 'goal-error', 'data-code': e.code, 'data-step': mine.step },
        el('p', { class: 'bad-text', text: t('goal.failed', { step: t(`goal.step.${mine.step}`) }) }),
        el('p', {}, el('code', { text: e.code }), el('span', { text: ` ${text}` })),
        e.detail
          ? el('details', {}, el('summary', { text: t('error.details') }), el('code', { text: e.detail }))
          : null,
        explainButton(() => [e.code, e.message, e.detail ?? ''].join('\n'), mine.host),
      ),
    );
  }
  const report = mine.report;
  if (report) {
    const ready = el(
      'div',
      { class: 'goal-ready', id: 'goal-ready' },
      el('p', {
        class: 'ok-text',
        text: t('goal.ready', { host: report.host, path: report.ready_path, status: report.ready_status }),
      }),
      el(
        'p',
        { class: 'small' },
        el('span', { text: `${t('goal.url')} ` }),
        el('code', { id: 'goal-url', text: report.url }),
      ),
      el('p', {
        class: 'small',
        id: 'goal-guard',
        text: t('goal.guard', {
          minutes: Math.round(report.guard.spec.idle_s / 60),
          action: t(`guard.action.${report.guard.spec.action}`),
        }),
      }),
    );
    if (report.next.length) {
      const next = el('ul', { class: 'small', id: 'goal-next' });
      for (const n of language() === 'zh-CN' ? report.next_zh_cn : report.next) next.append(el('li', { text: n }));
      ready.append(el('p', { class: 'small', text: t('goal.next') }), next);
    }
    if (report.results.length) {
      const res = el('ul', { class: 'small', id: 'goal-results' });
      for (const f of report.results) res.append(el('li', {}, el('code', { text: f })));
      ready.append(el('p', { class: 'small', text: t('goal.results') }), res);
    }
    // Transcribe, upload the input, download the results: while the machine is there.
    if (mine.state !== 'released') {
      const tools = renderTools(r, report, signal, notify);
      if (tools) ready.append(tools);
    }
    const row = el('div', { class: 'row' });
    if (mine.state === 'open') {
      const open = el('button', { type: 'button', class: 'primary', id: 'goal-open', text: t('goal.open') });
      open.addEventListener('click', () => {
        recipeOpen(report.url).catch((e) => showError(/** @type {ErrorPayload} */ (e)));
      });
      const stop = /** @type {HTMLButtonElement} */ (
        el('button', { type: 'button', id: 'goal-stop', text: t('goal.stop') })
      );
      stop.addEventListener('click', async () => {
        stop.disabled = true;
        mine.state = 'stopped';
        if (mine.op) ops.cancel(mine.op);
        try {
          await recipeStop(r.name, report.host);
        } catch (e) {
          showError(/** @type {ErrorPayload} */ (e));
        }
        notify();
      });
      row.append(open, stop);
    } else if (mine.state === 'stopped' || mine.state === 'closed') {
      ready.append(el('p', { class: 'muted small', id: 'goal-stopped', text: t('goal.stopped') }));
    }
    ready.append(row);
    box.append(ready);
  }
  // A rented machine bills until released, however the run ended: Release through the checklist,
  // with the recipe's result folders.
  if (mine.rented && mine.host && mine.state !== 'released') {
    const host = mine.host;
    const release = /** @type {HTMLButtonElement} */ (
      el('button', { type: 'button', class: 'danger', id: 'goal-release', text: t('goal.release') })
    );
    release.addEventListener('click', async () => {
      release.disabled = true;
      try {
        const done = await releaseInstance(host, r.results);
        if (done) {
          if (mine.op && mine.state === 'open') ops.cancel(mine.op);
          mine.state = 'released';
        }
      } catch (e) {
        showError(/** @type {ErrorPayload} */ (e));
      }
      if (!signal.aborted) release.disabled = false;
      notify();
    });
    box.append(
      el(
        'div',
        { class: 'row' },
        release,
        el('span', { class: 'muted small', text: t('goal.release.why', { id: host }) }),
      ),
    );
  }
  if (mine.state === 'released')
    box.append(el('p', { class: 'small', id: 'goal-released', text: t('goal.released', { id: mine.host ?? '' }) }));
}
