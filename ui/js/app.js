// Entry point: the step rail, routing between screens, language and theme.
import { forwardFileDrops, settingsGet } from './api.js';
import { showError } from './banner.js';
import { byId, clear, el } from './dom.js';
import { onLanguageChange, setLanguage, t } from './i18n.js';
import { setDefaultCurrency } from './money.js';
import { renderHosts } from './views/hosts/hosts.js';
import { renderKeys } from './views/keys/keys.js';
import { renderPick } from './views/pick/pick.js';
import { renderSetup } from './views/setup/setup.js';
import { renderFiles } from './views/files/files.js';
import { renderMonitor } from './views/monitor/monitor.js';
import { renderBilling } from './views/billing/billing.js';
import { startBudgetBanner } from './budget-banner.js';
import { renderSettings } from './views/settings/settings.js';
import { applyTheme } from './theme.js';
// Start from a goal.
import { renderGoal } from './views/goal/goal.js';

/** @typedef {import('../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/**
 * A screen draws into `root`; `signal` aborts when it leaves the page (see screen.js).
 * @typedef {(root: HTMLElement, signal: AbortSignal) => void | Promise<void>} Screen
 */

/**
 * The guided flow. Steps without a screen yet are shown disabled with their one-line description.
 * @type {{ id: string, screen?: Screen }[]}
 */
const STEPS = [
  // Start from a goal: the steps below, run in order for one goal.
  { id: 'goal', screen: renderGoal },
  { id: 'pick', screen: renderPick },
  { id: 'keys', screen: renderKeys },
  { id: 'hosts', screen: renderHosts },
  { id: 'setup', screen: renderSetup },
  { id: 'files', screen: renderFiles },
  { id: 'monitor', screen: renderMonitor },
  { id: 'billing', screen: renderBilling },
];

/** @type {Record<string, Screen>} */
const SCREENS = { settings: renderSettings };
for (const s of STEPS) if (s.screen) SCREENS[s.id] = s.screen;

let route = 'pick';
/** The screen on the page: aborted when the next one is drawn. */
let shown = new AbortController();

function renderRail() {
  const list = byId('rail-steps');
  clear(list);
  STEPS.forEach((step, i) => {
    const enabled = Boolean(step.screen);
    const button = el(
      'button',
      {
        class: `rail-item${route === step.id ? ' active' : ''}`,
        type: 'button',
        id: `nav-${step.id}`,
        'data-route': step.id,
        disabled: !enabled,
        'aria-current': route === step.id ? 'page' : undefined,
        title: enabled ? t(`nav.${step.id}.desc`) : `${t(`nav.${step.id}.desc`)} — ${t('nav.soon')}`,
      },
      el('span', { class: 'rail-num', text: String(i + 1) }),
      el(
        'span',
        { class: 'rail-text' },
        el('span', { class: 'rail-label', text: t(`nav.${step.id}`) }),
        enabled ? null : el('span', { class: 'rail-desc', text: t(`nav.${step.id}.desc`) }),
      ),
    );
    list.append(el('li', {}, button));
  });
  const settings = byId('rail-settings');
  settings.classList.toggle('active', route === 'settings');
}

/** @param {string} next */
export async function navigate(next) {
  if (!SCREENS[next]) return;
  route = next;
  shown.abort();
  shown = new AbortController();
  renderRail();
  const view = byId('view');
  clear(view);
  view.dataset.screen = next;
  await SCREENS[next](view, shown.signal);
}

async function start() {
  document.addEventListener('click', (ev) => {
    const target = /** @type {HTMLElement | null} */ (
      ev.target instanceof Element ? ev.target.closest('[data-route]') : null
    );
    if (target && !target.hasAttribute('disabled')) navigate(target.dataset.route ?? 'pick');
  });
  onLanguageChange(() => navigate(route));
  forwardFileDrops();
  try {
    const view = await settingsGet();
    applyTheme(view.settings.theme);
    setDefaultCurrency(view.effective_currency);
    setLanguage(view.effective_language);
    if (view.warning) showError(view.warning);
  } catch (e) {
    setLanguage(navigator.language.toLowerCase().startsWith('zh') ? 'zh-CN' : 'en');
    showError(/** @type {ErrorPayload} */ (e));
  }
  startBudgetBanner();
  await navigate(route);
  document.body.dataset.ready = 'true';
  performance.mark('gpurent-ready');
}

start();
