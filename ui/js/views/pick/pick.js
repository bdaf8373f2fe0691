// Step 1, "Pick a card": two tabs, the job estimate (default) and the card catalog.
import { el } from '../../dom.js';
import { t } from '../../i18n.js';
import { redraws } from '../../screen.js';
import { renderCatalog } from './catalog.js';
import { renderEstimate } from './estimate.js';
import { renderKinds } from './kinds.js';

/** @type {'estimate' | 'catalog'} */
let tab = 'estimate';
/** The job kind of the estimate tab; LLM (the original estimate) is the default. */
let kind = 'llm';
const KINDS = ['llm', 'image', 'video', 'lora', 'speech', '3dgs', 'render', 'simulation'];

/** @param {HTMLElement} root @param {AbortSignal} signal */
export async function renderPick(root, signal) {
  const tabDrawn = redraws(signal);
  await draw();

  /** Draw the screen with the chosen tab (again on each tab switch: the old tab's signal aborts). */
  async function draw() {
    const drawn = tabDrawn();
    root.replaceChildren();
    const body = el('div', { class: 'tab-body' });
    const tabs = el('div', { class: 'tabs', role: 'tablist' });
    for (const id of /** @type {const} */ (['estimate', 'catalog'])) {
      const b = el('button', {
        type: 'button',
        role: 'tab',
        id: `tab-${id}`,
        class: tab === id ? 'tab active' : 'tab',
        'aria-selected': tab === id ? 'true' : 'false',
        text: t(`pick.tab.${id}`),
      });
      b.addEventListener('click', () => {
        tab = id;
        draw();
      });
      tabs.append(b);
    }
    root.append(tabs, body);
    if (tab === 'catalog') return renderCatalog(body, drawn);
    const select = /** @type {HTMLSelectElement} */ (el('select', { id: 'job-kind' }));
    for (const k of KINDS) select.append(el('option', { value: k, text: t(`kind.${k}`) }));
    select.value = kind;
    select.addEventListener('change', () => {
      kind = select.value;
      draw();
    });
    const inner = el('div');
    body.append(el('label', { class: 'field job-kind' }, el('span', { text: t('kind.label') }), select), inner);
    await (kind === 'llm'
      ? renderEstimate(inner, drawn)
      : renderKinds(inner, drawn, /** @type {import('../../../bindings/JobKind').JobKind} */ (kind)));
  }
}
