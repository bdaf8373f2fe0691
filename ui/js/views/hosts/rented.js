// Rented machines, on the Hosts step: rents in progress (live, from ops.js) and how they ended,
// then the reconciled ledger (instances_list) — state, price, the instances the provider lists
// that gpurent did not start ("still billing") — with Stop / Start / Release, each stated in
// money first (instance_money) and confirmed, then the state the provider answered.
import { hostList, instanceAction, instanceMoney, instancesList, providerList } from '../../api.js';
import { clear, el } from '../../dom.js';
import { DICTIONARIES, errorText, t } from '../../i18n.js';
import { money } from '../../money.js';
import * as ops from '../../ops.js';
import { redraws } from '../../screen.js';
import { releaseForeign } from '../billing/billing.js';
import { confirmRelease } from '../billing/release.js';
import { actionMoneyText, outcomes, providerErrorText, usd } from './renting.js';
import { setupOn } from '../setup/setup.js';

/** @typedef {import('../../../bindings/InstanceView').InstanceView} InstanceView */
/** @typedef {import('../../../bindings/InstancesView').InstancesView} InstancesView */
/** @typedef {import('../../../bindings/MoneyNote').MoneyNote} MoneyNote */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {import('../../../bindings/Progress').Progress} Progress */
/** @typedef {'stop' | 'start' | 'release'} Action */

/**
 * Release (terminate) an instance: the one place the release is sent from. The caller has shown
 * the money and had it confirmed; then the release checklist (changed result folders, the disks
 * deleted, the cost of stopping instead, the environment recipe) asks once more. The answer is
 * the ledger row as the provider now reports it, or null when the user kept the machine.
 * @param {string} id the gpurent id (or the provider's)
 * @param {string[]} [folders] result folders the checklist looks at first (a recipe's)
 * @returns {Promise<InstanceView | null>}
 */
export async function releaseInstance(id, folders = []) {
  if (!(await confirmRelease(id, folders))) return null;
  return instanceAction(id, 'release');
}

/** @param {string} id @param {Action} action */
const runAction = (id, action) => (action === 'release' ? releaseInstance(id) : instanceAction(id, action));

/**
 * The Release button of a machine gpurent did not start (the same confirm as on Billing).
 * @param {import('../../../bindings/ForeignInstance').ForeignInstance} f @param {() => void} reload
 */
function foreignRelease(f, reload) {
  const b = el('button', {
    type: 'button',
    class: 'small-btn danger',
    'data-action': 'release-foreign',
    text: t('rented.release'),
  });
  b.addEventListener('click', () =>
    releaseForeign(
      {
        id: f.instance.id,
        account: f.account,
        name: f.instance.label ?? f.instance.id,
        price: f.instance.price_per_hour_usd,
      },
      reload,
    ),
  );
  return b;
}

/** Rent operations (by seq) whose ledger row the list has been redrawn for. */
const listed = new Set();

const OPEN = ['intent', 'provisioning', 'running', 'stopped', 'unknown'];
/** The steps of a rent the core reports (events::steps), in order. */
const RENT_STEPS = ['offer', 'key', 'create', 'wait_running', 'wait_ssh', 'login'];

/**
 * The Rented machines section. Shown when an account is connected, a rent runs, or the ledger has
 * rows; otherwise nothing is drawn.
 * @param {HTMLElement} root @param {AbortSignal} signal the Hosts screen's
 */
export async function renderRented(root, signal) {
  const section = el('section', { class: 'card wide rented', id: 'rented', hidden: true });
  const live = el('div', { id: 'rent-live' });
  const list = el('div', { id: 'rented-list' });
  const status = el('p', { class: 'muted small', id: 'rented-status', role: 'status' });
  const refresh = /** @type {HTMLButtonElement} */ (
    el('button', { type: 'button', id: 'rented-refresh', text: t('rented.refresh') })
  );
  section.append(
    el('div', { class: 'row between' }, el('h2', { text: t('rented.title') }), refresh),
    live,
    status,
    list,
  );
  root.append(section);

  let accounts = 0;
  /** @type {Set<string>} ledger ids already closed (a finished rent of one is not offered for Setup) */
  let closed = new Set();
  /** @type {InstancesView | null} */
  let last = null;
  try {
    accounts = (await providerList()).length;
  } catch {
    accounts = 0;
  }
  if (signal.aborted) return;
  // The running rents are drawn again on each read: their progress listeners end with a drawing.
  const liveDrawn = redraws(signal);

  async function reload() {
    refresh.disabled = true;
    status.textContent = t('rented.loading');
    try {
      const view = await instancesList();
      if (signal.aborted) return;
      status.textContent = '';
      const before = closed;
      closed = new Set(view.instances.filter((i) => !OPEN.includes(i.state)).map((i) => i.id));
      // A machine closed since the last read (released here, by its guard or in the console):
      // its saved host is now marked released, so the host list redraws.
      if (last !== null && [...closed].some((id) => !before.has(id)))
        section.dispatchEvent(new CustomEvent('machines-closed', { bubbles: true }));
      last = view;
      drawLive(live, closed, reload, last, status, liveDrawn());
      drawList(list, view, status, reload);
      section.hidden =
        accounts === 0 &&
        view.instances.length === 0 &&
        view.foreign.length === 0 &&
        ops.running('rent').length === 0 &&
        outcomes.length === 0;
    } catch (e) {
      if (!signal.aborted) status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
    } finally {
      refresh.disabled = false;
    }
  }
  refresh.addEventListener('click', reload);
  section.addEventListener('rent-finished', () => {
    drawLive(live, closed, reload, last, status, liveDrawn());
    reload();
  });
  drawLive(live, closed, reload, last, status, liveDrawn());
  await reload();
}

/**
 * A rent's progress line in the user's language. providers/rent.rs writes the provider's own status
 * word as it changes (`<provider id>: <word>`; the word is the provider's and stays as it is) and
 * `<id> is running at the provider`; any other line is shown as it is.
 * @param {string} line
 */
export function rentLogText(line) {
  const status = /^([a-z]+): (.+)$/.exec(line);
  if (status && `rent.provider.${status[1]}` in DICTIONARIES.en)
    return t('rent.log.status', { provider: t(`rent.provider.${status[1]}`), status: status[2] });
  const running = /^(gpurent-[0-9a-z]+) is running at the provider$/.exec(line);
  if (running) return t('rent.log.running', { id: running[1] });
  return line;
}

/**
 * The machine's own rate beside gpurent's, where the provider quoted no price before the create
 * (AutoDL: the rate gpurent shows is the documented one; the machine's own is read after).
 * @param {Pick<InstanceView, 'terms' | 'remote'>} i @returns {string | null}
 */
export function ownRateText(i) {
  const p = i.remote?.price_per_hour_usd;
  if (i.terms.price_before_create || p === null || p === undefined) return null;
  return t('rented.own_rate', { price: money(p, i.terms.currency, 3) });
}

/** @param {InstanceView} i */
const own = (i) => {
  const text = ownRateText(i);
  return text === null ? [] : [el('div', { class: 'muted small own-rate', text })];
};

/**
 * Running rents with their live progress and Cancel, then how the recent ones ended (not those
 * whose machine is closed since).
 * @param {HTMLElement} live @param {Set<string>} closed
 * @param {() => Promise<void>} reload redraws the ledger list (once a rent's row exists)
 * @param {InstancesView | null} view the ledger as last read @param {HTMLElement} status
 * @param {AbortSignal} signal this drawing (aborts when the section is drawn again or the screen goes)
 */
function drawLive(live, closed, reload, view, status, signal) {
  clear(live);
  for (const op of ops.running('rent')) {
    const steps = el('ol', { class: 'steps rent-steps' });
    /** @type {Record<string, HTMLElement>} */
    const items = {};
    for (const s of RENT_STEPS) {
      items[s] = el('li', { 'data-step': s, class: 'pending', text: t(`rent.step.${s}`) });
      steps.append(items[s]);
    }
    const log = el('ul', { class: 'rent-log small muted' });
    const cancel = /** @type {HTMLButtonElement} */ (
      el('button', { type: 'button', class: 'danger ghost rent-cancel', text: t('rent.cancel'), disabled: op.stopping })
    );
    cancel.addEventListener('click', () => {
      cancel.disabled = true;
      ops.cancel(op);
    });
    const box = el(
      'div',
      { class: 'rent-op', 'data-offer': op.scope },
      el('p', {}, el('strong', { text: t('rent.running', { offer: String(op.info.title ?? op.scope) }) })),
      steps,
      log,
      el('div', { class: 'row' }, cancel),
    );
    ops.attach(op, signal, (/** @type {Progress} */ p) => {
      if (p.kind === 'step') {
        const i = RENT_STEPS.indexOf(p.step);
        RENT_STEPS.forEach((s, j) => {
          items[s].className = j < i ? 'ok' : j === i ? 'running' : 'pending';
        });
        // Created: its ledger row is there now; show it in the list (once per rent).
        if (p.step === 'wait_running' && !listed.has(op.seq)) {
          listed.add(op.seq);
          reload();
        }
      } else if (p.kind === 'log') {
        log.append(el('li', { text: rentLogText(p.line) }));
      }
    });
    live.append(box);
  }
  // Newest first; the last few are enough.
  for (const o of [...outcomes].reverse().slice(0, 3))
    if (!closed.has(o.instance?.id ?? o.stuck ?? '')) live.append(outcomeBox(o, view, status, reload));
}

/**
 * How a rent ended. A rent that failed or was cancelled after the create left a machine that
 * bills: it is found in the ledger (this offer, not ready, created since the rent started) and
 * offered for release right here.
 * @param {typeof outcomes[number]} o @param {InstancesView | null} view @param {HTMLElement} status
 * @param {() => Promise<void>} reload
 */
function outcomeBox(o, view, status, reload) {
  const box = el('div', { class: `rent-outcome ${o.instance ? 'ok' : 'bad'}`, 'data-offer': o.offer.offer_id });
  if (o.instance) {
    const i = o.instance;
    box.id = 'rent-done';
    box.dataset.instance = i.id;
    const fp = el('code', { class: 'fingerprint', id: 'rent-fingerprint' });
    const setup = el('button', {
      type: 'button',
      class: 'primary',
      id: 'rent-open-setup',
      'data-route': 'setup',
      text: t('rent.open_setup'),
    });
    // Set the host first; the document's [data-route] listener then navigates.
    setup.addEventListener('click', () => setupOn(i.host_label ?? i.id));
    box.append(
      el('p', { class: 'ok-text', text: t('rent.ready', { id: i.id, host: i.host_label ?? i.id }) }),
      el('p', { class: 'small' }, el('span', { text: t('rent.fingerprint') }), ' ', fp),
      el('div', { class: 'row' }, setup),
    );
    hostList().then(
      (hosts) => {
        const h = hosts.find((x) => x.label === (i.host_label ?? i.id));
        fp.textContent =
          h?.host_keys.find((k) => k.role === 'target')?.fingerprint ?? h?.host_keys[0]?.fingerprint ?? '?';
      },
      () => {
        fp.textContent = '?';
      },
    );
  } else if (o.error) {
    box.append(
      el('p', {
        class: 'bad-text',
        'data-code': o.error.code,
        text: `${t('rent.failed', { offer: o.offer.gpu })} ${providerErrorText(o.error)}`,
      }),
    );
    const stuck = view?.instances.find(
      (i) =>
        OPEN.includes(i.state) &&
        !i.ready &&
        i.provider_instance_id !== null &&
        i.offer_id === o.offer.offer_id &&
        i.created_ms >= o.started - 60_000,
    );
    if (stuck) {
      o.stuck = stuck.id;
      box.id = 'rent-stuck';
      box.dataset.instance = stuck.id;
      const confirm = el('div', { class: 'confirm', hidden: true });
      const release = el('button', {
        type: 'button',
        class: 'danger',
        id: 'rent-stuck-release',
        text: t('rented.release'),
      });
      release.addEventListener('click', async () => {
        try {
          askConfirm(confirm, confirm, stuck, 'release', await instanceMoney(stuck.id, 'release'), status, reload);
        } catch (e) {
          status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
        }
      });
      box.append(
        el('p', { class: 'small', text: t('rent.stuck', { id: stuck.id, price: usd(stuck.price_per_hour_usd, 3) }) }),
        el('div', { class: 'row' }, release),
        confirm,
      );
    }
  }
  return box;
}

/**
 * @param {HTMLElement} list @param {InstancesView} view @param {HTMLElement} status
 * @param {() => Promise<void>} reload
 */
function drawList(list, view, status, reload) {
  clear(list);
  for (const f of view.reconcile.failed_accounts)
    list.append(
      el('p', {
        class: 'bad-text small',
        'data-account': f.account,
        text: t('rented.failed_account', {
          account: f.account,
          why: providerErrorText({ code: f.code, message: f.message }),
        }),
      }),
    );
  const open = view.instances.filter((i) => OPEN.includes(i.state));
  const closed = view.instances.filter((i) => !OPEN.includes(i.state));
  if (open.length === 0 && view.foreign.length === 0)
    list.append(el('p', { class: 'muted', id: 'rented-none', text: t('rented.none') }));
  if (open.length || view.foreign.length) {
    const head = el('tr');
    for (const k of ['machine', 'gpu', 'state', 'price', 'actions'])
      head.append(el('th', { scope: 'col', text: t(`rented.col.${k}`) }));
    const body = el('tbody');
    for (const i of open) body.append(...instanceRows(i, status, reload));
    for (const f of view.foreign) {
      body.append(
        el(
          'tr',
          { class: 'foreign', 'data-foreign': f.instance.id },
          el(
            'td',
            {},
            el('span', { text: f.instance.label ?? f.instance.id }),
            ' ',
            el('span', { class: 'muted small', text: `${t(`rent.provider.${f.provider}`)} · ${f.account}` }),
          ),
          el('td', { text: f.instance.gpu ? `${f.instance.gpu_count ?? 1}× ${f.instance.gpu}` : '—' }),
          el(
            'td',
            {},
            el('span', {
              class: f.billing ? 'tag warn' : 'tag',
              text: f.billing ? t('rented.foreign.billing') : t('rented.foreign'),
            }),
            ' ',
            el('span', { class: 'muted small', text: f.instance.raw_status }),
          ),
          el('td', {
            class: 'num',
            text: f.instance.price_per_hour_usd === null ? '—' : `${usd(f.instance.price_per_hour_usd, 3)}/h`,
          }),
          el('td', {}, foreignRelease(f, reload)),
        ),
      );
    }
    list.append(
      el(
        'div',
        { class: 'table-wrap' },
        el('table', { class: 'data', id: 'rented-table' }, el('thead', {}, head), body),
      ),
    );
  }
  if (closed.length) {
    const ul = el('ul', { class: 'small muted', id: 'rented-closed' });
    for (const i of closed.slice(0, 20))
      ul.append(
        el('li', {
          'data-instance': i.id,
          'data-state': i.state,
          text: `${i.id} · ${i.gpu_count}× ${i.gpu} · ${t(`rent.state.${i.state}`)}`,
        }),
      );
    list.append(el('details', {}, el('summary', { text: t('rented.closed', { n: closed.length }) }), ul));
  }
}

/**
 * The instance's row, and the row under it where an action's money is confirmed.
 * @param {InstanceView} i @param {HTMLElement} status @param {() => Promise<void>} reload
 * @returns {HTMLElement[]}
 */
function instanceRows(i, status, reload) {
  const confirmBox = el('div', { class: 'confirm' });
  const confirmRow = el(
    'tr',
    { class: 'confirm-row', 'data-confirm-for': i.id, hidden: true },
    el('td', { colspan: '5' }, confirmBox),
  );
  const actions = el('td', { class: 'actions' });
  /** @type {Action[]} */
  const can = [];
  if (i.provider_instance_id) {
    if (i.state === 'running' || i.state === 'provisioning') {
      if (i.terms.can_stop) can.push('stop');
    }
    if (i.state === 'stopped') can.push('start');
    can.push('release');
  }
  for (const a of can) {
    const b = /** @type {HTMLButtonElement} */ (
      el('button', { type: 'button', class: a === 'release' ? 'danger' : '', 'data-action': a, text: t(`rented.${a}`) })
    );
    b.addEventListener('click', async () => {
      try {
        const m = await instanceMoney(i.id, a);
        askConfirm(confirmRow, confirmBox, i, a, m, status, reload);
      } catch (e) {
        status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
      }
    });
    actions.append(b);
  }
  if (!i.terms.can_stop) actions.append(el('span', { class: 'muted small', text: t('rented.cannot_stop') }));
  // A provider that releases a machine left powered off N days (AutoDL: 15) wipes its data then.
  if (i.state === 'stopped' && i.terms.release_after_days_off !== null)
    actions.append(
      el('span', {
        class: 'bad-text small release-days',
        text: t('rent.money.release_days', {
          provider: t(`rent.provider.${i.provider}`),
          days: i.terms.release_after_days_off,
        }),
      }),
    );
  const remote = i.remote ? ` · ${i.remote.raw_status}` : '';
  return [
    el(
      'tr',
      { 'data-instance': i.id, 'data-state': i.state },
      el(
        'td',
        {},
        el('span', { text: i.id }),
        ' ',
        el('span', {
          class: 'muted small',
          text: `${t(`rent.provider.${i.provider}`)}${i.provider_instance_id ? ` · ${i.provider_instance_id}` : ''}`,
        }),
        i.ready ? el('span', { class: 'tag', text: t('rented.ready') }) : null,
      ),
      el('td', { text: `${i.gpu_count}× ${i.gpu}` }),
      el(
        'td',
        { class: 'state' },
        el('span', { class: 'state-word', text: t(`rent.state.${i.state}`) }),
        el('span', { class: 'muted small', text: remote }),
      ),
      el(
        'td',
        { class: 'num' },
        el('span', { text: `${money(i.price_per_hour_usd, i.terms.currency, 3)}/h` }),
        ...own(i),
      ),
      actions,
    ),
    confirmRow,
  ];
}

/**
 * @param {HTMLElement} row @param {HTMLElement} box @param {InstanceView} i @param {Action} action
 * @param {MoneyNote} m @param {HTMLElement} status @param {() => Promise<void>} reload
 */
function askConfirm(row, box, i, action, m, status, reload) {
  const yes = /** @type {HTMLButtonElement} */ (
    el('button', {
      type: 'button',
      class: action === 'release' ? 'danger' : 'primary',
      id: 'rented-confirm',
      text: t(`rented.confirm.${action}`),
    })
  );
  const no = el('button', { type: 'button', id: 'rented-confirm-cancel', text: t('rented.confirm.cancel') });
  box.replaceChildren(
    el('p', { class: 'small', id: 'rented-money', 'data-effect': m.effect, text: actionMoneyText(m, i) }),
    el('div', { class: 'row' }, yes, no),
  );
  row.hidden = false;
  box.classList.toggle('neutral', action !== 'release');
  no.addEventListener('click', () => {
    row.hidden = true;
  });
  yes.addEventListener('click', async () => {
    yes.disabled = true;
    status.textContent = t(`rented.doing.${action}`, { id: i.id });
    try {
      const after = await runAction(i.id, action);
      if (after === null) {
        status.textContent = t('rented.release.kept', { id: i.id });
        row.hidden = true;
        return;
      }
      status.textContent = t('rented.done', {
        id: after.id,
        state: t(`rent.state.${after.state}`),
        raw: after.remote?.raw_status ?? t('rented.gone'),
      });
      if (after.key_left) {
        // The full account key its guard held could not be taken off first: what to do.
        const left = errorText({ code: 'key_left', message: '', detail: after.key_left_why ?? '' });
        status.textContent = `${status.textContent} ${left}`;
      }
    } catch (e) {
      status.textContent = providerErrorText(/** @type {ErrorPayload} */ (e));
    }
    const keep = status.textContent;
    await reload();
    status.textContent = keep;
  });
}
