// The Monitor step's Run tab: Ollama (serve on chosen GPUs, pull with a progress bar, a short
// chat, the local tunnel), Jupyter through a tunnel, a multi-GPU launch with logs per rank, and
// the SkyPilot export. Long work runs in ops.js (it outlives the screen; Stop/Cancel cancel it).
import {
  exportSkypilot,
  jupyterOpen,
  jupyterStop,
  launchRun,
  launchStop,
  ollamaChat,
  ollamaFit,
  ollamaInstall,
  ollamaPs,
  ollamaPull,
  ollamaServe,
  ollamaStop,
  ollamaTunnel,
} from '../../api-run.js';
import { hideError, showError } from '../../banner.js';
import { clear, el } from '../../dom.js';
import { num, t } from '../../i18n.js';
import * as ops from '../../ops.js';
import { framed, listen, redraws } from '../../screen.js';
import { explainButton, explanationView } from '../setup/explain.js';
import { LogLines, logPane } from './logpane.js';

/** @typedef {import('../../../bindings/Host').Host} Host */
/** @typedef {import('../../../bindings/GpuRow').GpuRow} GpuRow */
/** @typedef {import('../../../bindings/PullProgress').PullProgress} PullProgress */
/** @typedef {import('../../../bindings/RankLine').RankLine} RankLine */
/** @typedef {import('../../../bindings/LaunchReport').LaunchReport} LaunchReport */
/** @typedef {import('../../../bindings/ErrorPayload').ErrorPayload} ErrorPayload */
/** @typedef {import('../../../bindings/ModelFit').ModelFit} ModelFit */
/** @typedef {import('../../../bindings/InstallProgress').InstallProgress} InstallProgress */
/** @typedef {import('../../../bindings/OllamaInstallReport').OllamaInstallReport} OllamaInstallReport */

/**
 * What the screen shows again after a redraw (module state; the operations live in ops.js).
 * Per host: the pull's layers, the tunnel and Jupyter URLs, the launch's lines per rank.
 * @typedef {object} RunData
 * @property {string} version
 * @property {string | null} foreign where an Ollama that gpurent did not start is bound (null: ours)
 * @property {Map<string, { total: number, completed: number }>} layers
 * @property {string} pullStatus
 * @property {boolean} pulled
 * @property {string} answer
 * @property {string} tunnelUrl
 * @property {string} jupyterUrl
 * @property {Map<string, LogLines>} ranks the launch's lines per rank ('torchrun': its own)
 * @property {LaunchReport | null} launch
 * @property {InstallProgress | null} install the install's latest stage
 * @property {OllamaInstallReport | null} installed
 * @property {ModelFit | null} fit the memory check of the model in the field
 * @property {boolean} refused the last pull was refused because the model does not fit
 * @property {{ ollama: string, jupyter: string }} failedLog the host's log (or the error's detail) of the last failed call
 * @property {Set<() => void>} listeners redraw the sections (an operation's progress or end)
 * @property {Set<() => void>} lineListeners a launch line arrived (only its pane draws it)
 */

/** @type {Map<string, RunData>} */
const runs = new Map();
const form = {
  host: '',
  port: '11434',
  model: 'qwen2.5:0.5b',
  prompt: 'Say hello in five words.',
  localPort: '11434',
  python: 'python3',
  jport: '8888',
  jlocal: '8888',
  script: 'train.py',
  args: '',
  nproc: '2',
  acc: 'H100:8',
  nodes: '2',
  setup: 'pip install -r requirements.txt',
  yaml: '',
};
/** GPUs chosen by UUID, for Ollama and for the launch. */
const chosen = { ollama: new Set(), launch: new Set() };
const MAX_LINES = 2000;

/** @param {string} label @returns {RunData} */
function rd(label) {
  let d = runs.get(label);
  if (!d) {
    d = {
      version: '',
      foreign: null,
      layers: new Map(),
      pullStatus: '',
      pulled: false,
      answer: '',
      tunnelUrl: '',
      jupyterUrl: '',
      ranks: new Map(),
      launch: null,
      install: null,
      installed: null,
      fit: null,
      refused: false,
      failedLog: { ollama: '', jupyter: '' },
      listeners: new Set(),
      lineListeners: new Set(),
    };
    runs.set(label, d);
  }
  return d;
}

/** @param {RunData} d */
const notify = (d) => {
  for (const l of d.listeners) l();
};

/** Bytes pulled of all layers seen so far, and their total (null until a layer has a total). @param {RunData} d */
function pullShare(d) {
  let total = 0;
  let done = 0;
  for (const l of d.layers.values()) {
    total += l.total;
    done += l.completed;
  }
  return total ? { done, total, pct: d.pulled ? 100 : Math.min(100, (100 * done) / total) } : null;
}

/** Ollama's own status words of a pull, translated where known (others shown as sent). @param {string} s */
function pullStatus(s) {
  if (s.startsWith('pulling ') && s !== 'pulling manifest')
    return t('run.ollama.status.pulling', { layer: s.slice(8) });
  const known = {
    success: 'success',
    'pulling manifest': 'manifest',
    'verifying sha256 digest': 'verifying',
    'writing manifest': 'writing',
  };
  return s in known ? t(`run.ollama.status.${known[/** @type {keyof typeof known} */ (s)]}`) : s;
}

/** The memory check as one sentence, and its notes. @param {ModelFit} f */
function fitText(f) {
  const p = {
    model: f.model,
    need: f.need_gib === null ? '?' : num(f.need_gib, 1),
    have: f.have_gib === null ? '?' : num(f.have_gib, 1),
    ctx: num(f.context_tokens, 0),
  };
  return [t(`run.fit.${f.verdict}`, p), ...f.notes.map((n) => t(n))].join(' ');
}

/** @param {unknown} e */
const fail = (e) => showError(/** @type {ErrorPayload} */ (e));

/** Keep a failed Ollama or Jupyter call's remote log (its error's detail) to show with an Explain button. @param {RunData} d @param {string} kind @param {ErrorPayload | null} e */
function keepLog(d, kind, e) {
  const section = kind.split('_')[0];
  if (section === 'ollama' || section === 'jupyter') d.failedLog[section] = e?.detail ?? '';
}

/**
 * Where a failed call's log is shown: the log and an Explain button, redrawn only when the log changes.
 * @param {string} id @param {string} label
 * @returns {{ node: HTMLElement, show: (log: string) => void }}
 */
function failedLogBox(id, label) {
  const node = el('div', { id, class: 'failed-log', hidden: true });
  let shown = '';
  const show = (/** @type {string} */ log) => {
    if (log === shown) return;
    shown = log;
    clear(node);
    node.hidden = !log;
    if (log)
      node.append(
        el('p', { class: 'small muted', text: t('explain.remote.log') }),
        el('pre', { class: 'log', text: log }),
        explainButton(() => log, label),
      );
  };
  return { node, show };
}

/** @param {string} id @param {string} label @param {HTMLElement} control @param {string} [cls] */
const field = (id, label, control, cls = '') => {
  control.id = id;
  return el('label', { class: `field ${cls}`, for: id }, el('span', { text: label }), control);
};

/** @param {keyof typeof form} key @param {string} [type] @returns {HTMLInputElement} */
function input(key, type = 'text') {
  const i = /** @type {HTMLInputElement} */ (el('input', { type, value: form[key] }));
  i.oninput = () => {
    form[key] = i.value;
  };
  return i;
}

/** @param {string} id @param {string} text @param {string} [cls] @returns {HTMLButtonElement} */
const button = (id, text, cls = '') =>
  /** @type {HTMLButtonElement} */ (el('button', { type: 'button', id, class: cls, text }));

/**
 * The Run tab, drawn again for each host chosen.
 * @param {HTMLElement} root @param {Host[]} hosts @param {(label: string) => GpuRow[]} gpusOf
 * @param {AbortSignal} signal the tab's
 */
export function renderRun(root, hosts, gpusOf, signal) {
  const drawn = redraws(signal);
  const draw = () => {
    clear(root);
    drawRun(root, hosts, gpusOf, drawn(), draw);
  };
  draw();
}

/**
 * @param {HTMLElement} root @param {Host[]} hosts @param {(label: string) => GpuRow[]} gpusOf
 * @param {AbortSignal} signal this drawing's @param {() => void} again draws the tab anew
 */
function drawRun(root, hosts, gpusOf, signal, again) {
  if (!hosts.some((h) => h.label === form.host)) form.host = hosts[0].label;
  const hostSel = /** @type {HTMLSelectElement} */ (el('select', { id: 'run-host' }));
  for (const h of hosts)
    hostSel.append(
      el('option', {
        value: h.label,
        text: `${h.label} — ${h.user}@${h.address}:${h.port}`,
        selected: h.label === form.host,
      }),
    );
  hostSel.onchange = () => {
    form.host = hostSel.value;
    again();
  };
  root.append(el('div', { class: 'form-row' }, field('run-host', t('setup.host'), hostSel)));
  const label = form.host;
  const d = rd(label);
  const launch = launchSection(label, d, gpusOf(label));
  const sections = [ollamaSection(label, d, gpusOf(label)), jupyterSection(label, d), launch, skypilotSection()];
  root.append(...sections.map((s) => s.node));
  const draw = () => {
    for (const s of sections) s.draw();
  };
  // One redraw per frame however many progress events arrived; a streamed launch line only
  // appends to its rank's pane (once per frame too), nothing else is drawn again.
  listen(d.listeners, framed(signal, draw), signal);
  listen(d.lineListeners, framed(signal, launch.lines), signal);
  draw();
}

/** GPU checkboxes by UUID from the last Monitor sample (none: the job sees every GPU). @param {GpuRow[]} gpus @param {'ollama' | 'launch'} name */
function gpuPicker(gpus, name) {
  const set = chosen[name];
  const box = el('div', { class: 'gpu-pick', 'data-for': name });
  if (!gpus.length) {
    box.append(el('p', { class: 'small muted', text: t('run.gpus.unknown') }));
    return box;
  }
  for (const g of gpus) {
    if (!g.uuid) continue;
    const uuid = g.uuid;
    const c = /** @type {HTMLInputElement} */ (el('input', { type: 'checkbox', value: uuid, checked: set.has(uuid) }));
    c.onchange = () => {
      if (c.checked) set.add(uuid);
      else set.delete(uuid);
    };
    box.append(
      el(
        'label',
        { class: 'check' },
        c,
        el('span', { text: `${t('monitor.gpu', { index: g.index ?? '?' })} · ${g.name ?? ''}` }),
        el('code', { class: 'small muted', text: uuid }),
      ),
    );
  }
  box.append(el('p', { class: 'small muted', text: t('run.gpus.renumber') }));
  return box;
}

/** Run `call` as an operation of `kind` on `label`, redrawing on its end; errors in the banner. @template T @param {string} kind @param {string} label @param {RunData} d @param {(on: (p: import('../../../bindings/Progress').Progress) => void) => Promise<T>} call */
function operation(kind, label, d, call) {
  hideError();
  keepLog(d, kind, null);
  const { result } = ops.start(kind, label, {}, call);
  notify(d);
  result
    .catch((e) => {
      if (/** @type {ErrorPayload} */ (e).code === 'cancelled') return;
      keepLog(d, kind, /** @type {ErrorPayload} */ (e));
      fail(e);
    })
    .finally(() => notify(d));
  return result;
}

/** @param {string} label @param {RunData} d @param {GpuRow[]} gpus */
function ollamaSection(label, d, gpus) {
  const port = input('port', 'number');
  const model = input('model');
  const prompt = input('prompt');
  const localPort = input('localPort', 'number');
  const serve = button('ollama-serve', t('run.ollama.serve'), 'primary');
  const install = button('ollama-install', t('run.ollama.install'));
  const installBar = /** @type {HTMLProgressElement} */ (
    el('progress', { id: 'ollama-install-progress', max: '100', hidden: true })
  );
  const installLine = el('p', { class: 'small', id: 'ollama-install-status', role: 'status' });
  const fitBtn = button('ollama-fit', t('run.fit.check'));
  const force = button('ollama-pull-force', t('run.fit.force'), 'ghost');
  const fitLine = el('p', { class: 'small fit', id: 'ollama-fit-verdict' });
  const stop = button('ollama-stop', t('run.ollama.stop'), 'danger ghost');
  const pull = button('ollama-pull', t('run.ollama.pull'), 'primary');
  const cancelPull = button('ollama-pull-cancel', t('run.ollama.pull.cancel'), 'ghost');
  const chat = button('ollama-chat', t('run.ollama.chat'));
  const ps = button('ollama-ps', t('run.ollama.ps'));
  const tunnel = button('ollama-tunnel', t('run.tunnel.start'));
  const untunnel = button('ollama-untunnel', t('run.tunnel.stop'), 'ghost');
  const version = el('p', { class: 'small', id: 'ollama-version', role: 'status' });
  const bar = /** @type {HTMLProgressElement} */ (el('progress', { id: 'ollama-progress', max: '100', value: '0' }));
  const pct = el('span', { id: 'ollama-pct', class: 'pct' });
  const pullLine = el('p', { class: 'small muted', id: 'ollama-pull-status' });
  const answer = el('pre', { class: 'log answer', id: 'ollama-answer' });
  const psOut = el('ul', { class: 'small', id: 'ollama-ps-out' });
  const url = el('p', { class: 'small', id: 'ollama-url' });
  const failed = failedLogBox('ollama-failed-log', label);
  const portNum = () => Number(form.port) || 11434;

  const picked = () => [...chosen.ollama].filter((u) => gpus.some((g) => g.uuid === u));
  serve.onclick = () =>
    operation('ollama_serve', label, d, (on) => ollamaServe(label, portNum(), picked(), on)).then(
      (v) => {
        d.version = v.version;
        d.foreign = v.ours ? null : v.bound;
        notify(d);
      },
      () => {},
    );
  install.onclick = () => {
    d.install = null;
    d.installed = null;
    operation('ollama_install', label, d, (on) =>
      ollamaInstall(label, portNum(), picked(), on, (p) => {
        d.install = p;
        notify(d);
      }),
    ).then(
      (r) => {
        d.installed = r;
        d.version = r.version;
        d.foreign = r.ours ? null : r.bound;
        d.install = null;
        notify(d);
      },
      () => {
        d.install = null;
        notify(d);
      },
    );
  };
  fitBtn.onclick = () => {
    hideError();
    ollamaFit(label, form.model, picked()).then((f) => {
      d.fit = f;
      notify(d);
    }, fail);
  };
  stop.onclick = () => {
    hideError();
    ollamaStop(label).then((was) => {
      d.version = '';
      d.foreign = null;
      version.textContent = was ? t('run.ollama.stopped') : t('run.ollama.none');
    }, fail);
  };
  /** @param {boolean} forced */
  const startPull = (forced) => {
    d.layers.clear();
    d.pulled = false;
    d.pullStatus = '';
    d.refused = false;
    hideError();
    keepLog(d, 'ollama_pull', null);
    const { result } = ops.start('ollama_pull', label, {}, (on) =>
      ollamaPull(
        label,
        portNum(),
        form.model,
        picked(),
        forced,
        on,
        (f) => {
          d.fit = f;
          notify(d);
        },
        (p) => {
          if (p.digest && p.total) d.layers.set(p.digest, { total: p.total, completed: p.completed ?? 0 });
          d.pullStatus = p.status;
          if (p.status === 'success') d.pulled = true;
          notify(d);
        },
      ),
    );
    notify(d);
    result
      .catch((e) => {
        const err = /** @type {ErrorPayload} */ (e);
        // Refused by the memory check: the sentence with its numbers, and "Pull anyway".
        if (err.code === 'model_does_not_fit') d.refused = true;
        else if (err.code !== 'cancelled') {
          keepLog(d, 'ollama_pull', err);
          fail(err);
        }
      })
      .finally(() => notify(d));
  };
  pull.onclick = () => startPull(false);
  force.onclick = () => startPull(true);
  cancelPull.onclick = () => {
    const op = ops.running('ollama_pull', label)[0];
    if (op) ops.cancel(op);
  };
  chat.onclick = () => {
    d.answer = '';
    operation('ollama_chat', label, d, (on) =>
      ollamaChat(label, portNum(), form.model, form.prompt, on, (s) => {
        d.answer += s;
        notify(d);
      }),
    ).then(
      (a) => {
        d.answer = a;
        notify(d);
      },
      () => {},
    );
  };
  ps.onclick = () => {
    hideError();
    ollamaPs(label, portNum()).then((models) => {
      clear(psOut);
      if (models === null) psOut.append(el('li', { class: 'muted', text: t('run.ollama.none') }));
      else if (!models.length) psOut.append(el('li', { class: 'muted', text: t('run.ollama.ps.empty') }));
      else
        for (const m of models)
          psOut.append(
            el('li', {
              text: t('run.ollama.ps.model', {
                name: m.name,
                vram: m.size_vram === null ? '—' : num(m.size_vram / 2 ** 30, 1),
              }),
            }),
          );
    }, fail);
  };
  tunnel.onclick = () => {
    operation('ollama_tunnel', label, d, (on) =>
      ollamaTunnel(label, Number(form.localPort) || 0, portNum(), on, (p) => {
        d.tunnelUrl = `http://127.0.0.1:${p}`;
        notify(d);
      }),
    )
      .catch(() => {})
      .finally(() => {
        d.tunnelUrl = '';
        notify(d);
      });
  };
  untunnel.onclick = () => {
    const op = ops.running('ollama_tunnel', label)[0];
    if (op) ops.cancel(op);
  };

  const node = el(
    'section',
    { class: 'card run-card', id: 'run-ollama' },
    el('h2', { text: t('run.ollama.title') }),
    el('p', { class: 'small muted', text: t('run.ollama.intro') }),
    el('div', { class: 'form-row' }, field('ollama-port', t('run.ollama.port'), port), serve, install, stop),
    el('p', { class: 'small muted', text: t('run.ollama.install.note') }),
    el('div', { class: 'row' }, installBar, installLine),
    gpuPicker(gpus, 'ollama'),
    version,
    failed.node,
    el('h3', { text: t('run.ollama.pull.title') }),
    el(
      'div',
      { class: 'form-row' },
      field('ollama-model', t('run.ollama.model'), model, 'grow'),
      fitBtn,
      pull,
      cancelPull,
    ),
    el('div', { class: 'row' }, fitLine, force),
    el('div', { class: 'row pull-row' }, bar, pct),
    pullLine,
    el('p', { class: 'small muted', text: t('run.ollama.pull.resume') }),
    el('h3', { text: t('run.ollama.chat.title') }),
    el('div', { class: 'form-row' }, field('ollama-prompt', t('run.ollama.prompt'), prompt, 'grow'), chat, ps),
    answer,
    psOut,
    el('h3', { text: t('run.tunnel.title') }),
    el('div', { class: 'form-row' }, field('ollama-local-port', t('run.tunnel.local'), localPort), tunnel, untunnel),
    url,
  );

  const draw = () => {
    const busy = (/** @type {string} */ k) => ops.running(k, label).length > 0;
    failed.show(d.failedLog.ollama);
    serve.disabled = busy('ollama_serve') || busy('ollama_install');
    install.disabled = serve.disabled;
    const ip = d.install;
    installBar.hidden = !ip || ip.stage !== 'downloading';
    if (ip && ip.total) {
      installBar.max = ip.total;
      installBar.value = ip.downloaded ?? 0;
    } else installBar.removeAttribute('value');
    if (ip)
      installLine.textContent =
        t(`run.ollama.install.stage.${ip.stage}`) +
        (ip.stage === 'downloading' && ip.total
          ? ` ${t('run.ollama.install.bytes', { done: num((ip.downloaded ?? 0) / 2 ** 20, 0), total: num(ip.total / 2 ** 20, 0) })}`
          : '');
    else if (d.installed)
      installLine.textContent = t(
        d.installed.already_installed ? 'run.ollama.install.already' : 'run.ollama.install.done',
        { version: d.installed.version, path: d.installed.path },
      );
    else installLine.textContent = '';
    fitLine.textContent = d.fit && d.fit.model === form.model ? fitText(d.fit) : '';
    fitLine.dataset.verdict = d.fit?.verdict ?? '';
    force.hidden = !d.refused;
    version.textContent = busy('ollama_serve')
      ? t('run.ollama.starting')
      : d.version
        ? d.foreign
          ? t('run.ollama.version.foreign', { version: d.version, port: portNum(), bound: d.foreign })
          : t('run.ollama.version', { version: d.version, port: portNum() })
        : version.textContent;
    version.classList.toggle('warn', Boolean(d.version && d.foreign));
    version.dataset.ours = d.version ? String(!d.foreign) : '';
    const pulling = busy('ollama_pull');
    pull.disabled = pulling;
    cancelPull.hidden = !pulling;
    const share = pullShare(d);
    const p = share ? share.pct : d.pulled ? 100 : 0;
    bar.value = p;
    bar.dataset.pct = p.toFixed(0);
    pct.textContent = share || d.pulled ? `${num(p, 0)} %` : '';
    pullLine.textContent = d.pullStatus
      ? share
        ? t('run.ollama.pull.line', {
            status: pullStatus(d.pullStatus),
            done: num(share.done / 2 ** 20, 0),
            total: num(share.total / 2 ** 20, 0),
          })
        : pullStatus(d.pullStatus)
      : '';
    chat.disabled = busy('ollama_chat');
    answer.textContent = d.answer;
    answer.hidden = !d.answer;
    const tunnelOn = busy('ollama_tunnel');
    tunnel.disabled = tunnelOn;
    untunnel.hidden = !tunnelOn;
    clear(url);
    if (d.tunnelUrl)
      url.append(
        el('span', { class: 'muted', text: `${t('run.tunnel.url')} ` }),
        el('code', { class: 'url', text: d.tunnelUrl }),
      );
  };
  return { node, draw };
}

/** @param {string} label @param {RunData} d */
function jupyterSection(label, d) {
  const python = input('python');
  const port = input('jport', 'number');
  const local = input('jlocal', 'number');
  const browser = /** @type {HTMLInputElement} */ (
    el('input', { type: 'checkbox', id: 'jupyter-browser', checked: true })
  );
  const open = button('jupyter-open', t('run.jupyter.open'), 'primary');
  const close = button('jupyter-stop', t('run.jupyter.stop'), 'danger ghost');
  const url = el('p', { class: 'small', id: 'jupyter-url' });
  const failed = failedLogBox('jupyter-failed-log', label);
  open.onclick = () => {
    operation('jupyter_open', label, d, (on) =>
      jupyterOpen(
        label,
        form.python,
        Number(form.jport) || 8888,
        Number(form.jlocal) || 0,
        browser.checked,
        on,
        (u) => {
          d.jupyterUrl = u;
          notify(d);
        },
      ),
    )
      .catch(() => {})
      .finally(() => {
        d.jupyterUrl = '';
        notify(d);
      });
  };
  close.onclick = () => {
    const op = ops.running('jupyter_open', label)[0];
    if (op) ops.cancel(op);
    hideError();
    jupyterStop(label).then((was) => {
      url.textContent = was ? t('run.jupyter.stopped') : t('run.jupyter.none');
    }, fail);
  };
  const node = el(
    'section',
    { class: 'card run-card', id: 'run-jupyter' },
    el('h2', { text: t('run.jupyter.title') }),
    el('p', { class: 'small muted', text: t('run.jupyter.intro') }),
    el(
      'div',
      { class: 'form-row' },
      field('jupyter-python', t('run.jupyter.python'), python),
      field('jupyter-port', t('run.jupyter.port'), port),
      field('jupyter-local', t('run.tunnel.local'), local),
    ),
    el(
      'div',
      { class: 'row' },
      el('label', { class: 'check' }, browser, el('span', { text: t('run.jupyter.browser') })),
      open,
      close,
    ),
    url,
    failed.node,
  );
  const draw = () => {
    failed.show(d.failedLog.jupyter);
    const on = ops.running('jupyter_open', label).length > 0;
    open.disabled = on;
    if (on) {
      clear(url);
      if (d.jupyterUrl)
        url.append(
          el('span', { class: 'muted', text: `${t('run.tunnel.url')} ` }),
          el('code', { class: 'url', text: d.jupyterUrl }),
        );
      else url.textContent = t('run.jupyter.starting');
    }
  };
  return { node, draw };
}

/** @param {string} label @param {RunData} d @param {GpuRow[]} gpus */
function launchSection(label, d, gpus) {
  const script = input('script');
  const args = input('args');
  const nproc = input('nproc', 'number');
  const run = button('launch-run', t('run.launch.run'), 'primary');
  const stop = button('launch-stop', t('run.launch.stop'), 'danger ghost');
  const logs = el('div', { class: 'rank-logs', id: 'launch-logs' });
  const result = el('div', { id: 'launch-result' });
  // Each rank's Explain button (and its answer) outlives the redraws a new line or another
  // section's progress causes; a new launch starts without them.
  /** @type {Map<string, HTMLElement>} */
  const explainers = new Map();
  /** @param {string} k */
  const explainer = (k) => {
    let b = explainers.get(k);
    if (!b) {
      b = explainButton(() => d.ranks.get(k)?.text() ?? '', label);
      explainers.set(k, b);
    }
    return b;
  };
  run.onclick = () => {
    explainers.clear();
    d.ranks.clear();
    d.launch = null;
    const n = Math.max(1, Number(form.nproc) || 1);
    const picked = [...chosen.launch].filter((u) => gpus.some((g) => g.uuid === u));
    const spec = {
      nproc: picked.length || n,
      gpus: picked,
      script: [form.script, ...form.args.split(/\s+/).filter(Boolean)],
    };
    operation('launch_run', label, d, (on) =>
      launchRun(label, spec, on, (l) => {
        const key = l.rank === null ? 'torchrun' : String(l.rank);
        let lines = d.ranks.get(key);
        if (!lines) d.ranks.set(key, (lines = new LogLines(MAX_LINES)));
        lines.push(l.line);
        for (const fn of d.lineListeners) fn();
      }),
    ).then(
      (r) => {
        d.launch = r;
        notify(d);
      },
      () => {},
    );
  };
  stop.onclick = () => {
    const op = ops.running('launch_run', label)[0];
    if (op) ops.cancel(op);
    else {
      hideError();
      launchStop(label).catch(fail);
    }
  };
  const node = el(
    'section',
    { class: 'card run-card', id: 'run-launch' },
    el('h2', { text: t('run.launch.title') }),
    el('p', { class: 'small muted', text: t('run.launch.intro') }),
    el(
      'div',
      { class: 'form-row' },
      field('launch-script', t('run.launch.script'), script, 'grow'),
      field('launch-args', t('run.launch.args'), args, 'grow'),
      field('launch-nproc', t('run.launch.nproc'), nproc),
    ),
    gpuPicker(gpus, 'launch'),
    el('div', { class: 'row' }, run, stop),
    logs,
    result,
    el('p', { class: 'small muted', text: t('run.launch.nccl') }),
  );
  /**
   * One pane per rank (torchrun's own lines first), kept across draws: new lines are appended.
   * @type {Map<string, { log: LogLines, node: HTMLElement, sync: () => void }>}
   */
  const panes = new Map();
  const order = (/** @type {string} */ a, /** @type {string} */ b) =>
    a === 'torchrun' ? -1 : b === 'torchrun' ? 1 : Number(a) - Number(b);
  const lines = () => {
    for (const [k, p] of panes)
      if (d.ranks.get(k) !== p.log) {
        p.node.remove();
        panes.delete(k);
      }
    for (const [k, log] of d.ranks) {
      let p = panes.get(k);
      if (!p) {
        const pre = el('pre', { class: 'log', 'data-rank': k });
        const node = el(
          'div',
          { class: 'rank' },
          el('div', {
            class: 'small muted',
            text: k === 'torchrun' ? t('run.launch.torchrun') : t('run.launch.rank', { rank: k }),
          }),
          pre,
          explainer(k),
        );
        const after = [...panes.keys()].sort(order).find((o) => order(o, k) > 0);
        logs.insertBefore(node, after === undefined ? null : (panes.get(after)?.node ?? null));
        p = { log, node, sync: logPane(pre, log) };
        panes.set(k, p);
      }
      p.sync();
    }
  };
  /** @type {LaunchReport | null} */
  let shownReport = null;
  const draw = () => {
    const on = ops.running('launch_run', label).length > 0;
    run.disabled = on;
    lines();
    if (d.launch === shownReport) return;
    shownReport = d.launch;
    clear(result);
    if (d.launch) {
      result.append(
        el('p', {
          class: d.launch.status === 0 ? 'ok' : 'warn',
          'data-status': String(d.launch.status),
          text: d.launch.status === null ? t('run.launch.killed') : t('run.launch.exit', { status: d.launch.status }),
        }),
      );
      for (const h of d.launch.hints) result.append(el('p', { class: 'hint small', 'data-hint': h, text: t(h) }));
      if (d.launch.explanation)
        result.append(
          el('p', { class: 'small muted', text: t('explain.auto') }),
          explanationView(d.launch.explanation),
        );
    }
  };
  return { node, draw, lines };
}

function skypilotSection() {
  const acc = input('acc');
  const nodes = input('nodes', 'number');
  const setup = input('setup');
  const go = button('skypilot-export', t('run.skypilot.export'), 'primary');
  const copy = button('skypilot-copy', t('run.skypilot.copy'), 'ghost');
  const out = el('pre', { class: 'log yaml', id: 'skypilot-yaml' });
  const copied = el('span', { class: 'small muted', role: 'status' });
  go.onclick = () => {
    hideError();
    exportSkypilot('gpurent-job', form.acc, Math.max(1, Number(form.nodes) || 1), form.setup, [
      form.script,
      ...form.args.split(/\s+/).filter(Boolean),
    ]).then((y) => {
      form.yaml = y;
      draw();
    }, fail);
  };
  copy.onclick = () => {
    navigator.clipboard.writeText(form.yaml).then(
      () => {
        copied.textContent = t('run.skypilot.copied');
      },
      () => {
        const range = document.createRange();
        range.selectNodeContents(out);
        const sel = window.getSelection();
        sel?.removeAllRanges();
        sel?.addRange(range);
        copied.textContent = t('run.skypilot.selected');
      },
    );
  };
  const node = el(
    'section',
    { class: 'card run-card', id: 'run-skypilot' },
    el('h2', { text: t('run.skypilot.title') }),
    el('p', { class: 'small muted', text: t('run.skypilot.intro') }),
    el(
      'div',
      { class: 'form-row' },
      field('skypilot-acc', t('run.skypilot.accelerators'), acc),
      field('skypilot-nodes', t('run.skypilot.nodes'), nodes),
      field('skypilot-setup', t('run.skypilot.setup'), setup, 'grow'),
    ),
    el('div', { class: 'row' }, go, copy, copied),
    out,
  );
  const draw = () => {
    out.textContent = form.yaml;
    out.hidden = !form.yaml;
    copy.hidden = !form.yaml;
  };
  return { node, draw };
}
