// A minimal DOM for the UI's node tests (no dependencies): enough of Document, Element and Text
// for ui/js/dom.js, chart.js and the screens' drawing code, plus what a test wants to know — how
// many nodes were created and which nodes had their children or text changed (`mutations`).
// Not a browser: no layout (scrollHeight is the number of children), no CSS, no events beyond
// addEventListener/dispatch by hand, and only the selectors `find` understands.

export class FakeNode {
  /** @param {FakeDocument} doc */
  constructor(doc) {
    this.ownerDocument = doc;
    /** @type {FakeNode[]} */
    this.childNodes = [];
    /** @type {FakeNode | null} */
    this.parentNode = null;
  }

  get firstChild() {
    return this.childNodes[0] ?? null;
  }

  get lastChild() {
    return this.childNodes[this.childNodes.length - 1] ?? null;
  }

  get parentElement() {
    return this.parentNode;
  }

  /** @param {FakeNode} c */
  appendChild(c) {
    return this.insertBefore(c, null);
  }

  /** @param {FakeNode} c @param {FakeNode | null} ref */
  insertBefore(c, ref) {
    if (c instanceof FakeFragment) {
      for (const x of [...c.childNodes]) this.insertBefore(x, ref);
      return c;
    }
    if (c.parentNode) c.parentNode.removeChild(c);
    const i = ref ? this.childNodes.indexOf(ref) : -1;
    if (i < 0) this.childNodes.push(c);
    else this.childNodes.splice(i, 0, c);
    c.parentNode = this;
    this.ownerDocument.mutations.push({ op: 'insert', node: this });
    return c;
  }

  /** @param {...(FakeNode | string)} cs */
  append(...cs) {
    for (const c of cs) this.appendChild(typeof c === 'string' ? this.ownerDocument.createTextNode(c) : c);
  }

  /** @param {...(FakeNode | string)} cs */
  prepend(...cs) {
    const first = this.firstChild;
    for (const c of cs) this.insertBefore(typeof c === 'string' ? this.ownerDocument.createTextNode(c) : c, first);
  }

  /** @param {FakeNode} c */
  removeChild(c) {
    const i = this.childNodes.indexOf(c);
    if (i < 0) throw new Error('removeChild: not a child');
    this.childNodes.splice(i, 1);
    c.parentNode = null;
    this.ownerDocument.mutations.push({ op: 'remove', node: this });
    return c;
  }

  remove() {
    this.parentNode?.removeChild(this);
  }

  /** @param {FakeNode} next @param {FakeNode} old */
  replaceChild(next, old) {
    this.insertBefore(next, old);
    return this.removeChild(old);
  }

  /** @param {FakeNode} next */
  replaceWith(next) {
    this.parentNode?.replaceChild(next, this);
  }

  /** @param {FakeNode} other */
  contains(other) {
    for (let n = /** @type {FakeNode | null} */ (other); n; n = n.parentNode) if (n === this) return true;
    return false;
  }

  /** @returns {string} */
  get textContent() {
    return this.childNodes.map((c) => c.textContent).join('');
  }

  set textContent(v) {
    this.childNodes.forEach((c) => (c.parentNode = null));
    this.childNodes = [];
    const s = String(v ?? '');
    if (s) {
      const t = this.ownerDocument.createTextNode(s);
      this.childNodes.push(t);
      t.parentNode = this;
    }
    this.ownerDocument.mutations.push({ op: 'text', node: this });
  }
}

export class FakeText extends FakeNode {
  /** @param {FakeDocument} doc @param {string} data */
  constructor(doc, data) {
    super(doc);
    this.data = data;
  }

  get textContent() {
    return this.data;
  }

  set textContent(v) {
    this.data = String(v);
    this.ownerDocument.mutations.push({ op: 'text', node: this });
  }

  get nodeValue() {
    return this.data;
  }
}

export class FakeFragment extends FakeNode {}

export class FakeElement extends FakeNode {
  /** @param {FakeDocument} doc @param {string} tag */
  constructor(doc, tag) {
    super(doc);
    this.tagName = tag.toUpperCase();
    /** @type {Map<string, string>} */
    this.attributes = new Map();
    /** @type {Map<string, Set<(e: unknown) => void>>} */
    this.listeners = new Map();
    this.hidden = false;
    this.disabled = false;
    this.checked = false;
    this.value = '';
    this.scrollTop = 0;
    this.clientHeight = 0;
    const el = this;
    this.dataset = new Proxy(
      {},
      {
        get: (_, k) => el.getAttribute(`data-${camelToDash(String(k))}`) ?? undefined,
        set: (_, k, v) => {
          el.setAttribute(`data-${camelToDash(String(k))}`, String(v));
          return true;
        },
      },
    );
    this.classList = {
      /** @param {string} c @param {boolean} [on] */
      toggle: (c, on) => {
        const set = new Set(el.className.split(/\s+/).filter(Boolean));
        const want = on === undefined ? !set.has(c) : on;
        if (want) set.add(c);
        else set.delete(c);
        el.className = [...set].join(' ');
        return want;
      },
      /** @param {string} c */
      contains: (c) => el.className.split(/\s+/).includes(c),
      /** @param {...string} cs */
      add: (...cs) => cs.forEach((c) => el.classList.toggle(c, true)),
      /** @param {...string} cs */
      remove: (...cs) => cs.forEach((c) => el.classList.toggle(c, false)),
    };
  }

  get children() {
    return this.childNodes.filter((c) => c instanceof FakeElement);
  }

  get id() {
    return this.getAttribute('id') ?? '';
  }

  set id(v) {
    this.setAttribute('id', v);
  }

  get className() {
    return this.getAttribute('class') ?? '';
  }

  set className(v) {
    this.setAttribute('class', v);
  }

  /** A stand-in for layout: one "line" per child. */
  get scrollHeight() {
    return this.childNodes.length;
  }

  /** @param {string} k @param {unknown} v */
  setAttribute(k, v) {
    this.attributes.set(k, String(v));
    if (k === 'value') this.value = String(v);
    if (k === 'checked') this.checked = true;
  }

  /** @param {string} k */
  getAttribute(k) {
    return this.attributes.has(k) ? /** @type {string} */ (this.attributes.get(k)) : null;
  }

  /** @param {string} k */
  hasAttribute(k) {
    return this.attributes.has(k);
  }

  /** @param {string} k */
  removeAttribute(k) {
    this.attributes.delete(k);
  }

  /** @param {string} type @param {(e: unknown) => void} fn */
  addEventListener(type, fn) {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(fn);
  }

  /** @param {string} type @param {(e: unknown) => void} fn */
  removeEventListener(type, fn) {
    this.listeners.get(type)?.delete(fn);
  }

  /** Run the `on<type>` handler and the listeners of `type`. @param {string} type */
  fire(type) {
    const e = { type, target: this, preventDefault() {} };
    const prop = /** @type {Record<string, unknown>} */ (/** @type {unknown} */ (this))[`on${type}`];
    if (typeof prop === 'function') prop.call(this, e);
    for (const fn of this.listeners.get(type) ?? []) fn(e);
  }

  click() {
    this.fire('click');
  }
}

/** @param {string} s */
const camelToDash = (s) => s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

export class FakeDocument {
  constructor() {
    this.created = 0;
    /** @type {{ op: string, node: FakeNode }[]} */
    this.mutations = [];
    this.body = new FakeElement(this, 'body');
    this.documentElement = this.body;
  }

  /** @param {string} tag */
  createElement(tag) {
    this.created++;
    return new FakeElement(this, tag);
  }

  /** @param {string} _ns @param {string} tag */
  createElementNS(_ns, tag) {
    return this.createElement(tag);
  }

  /** @param {string} s */
  createTextNode(s) {
    this.created++;
    return new FakeText(this, String(s));
  }

  createDocumentFragment() {
    return new FakeFragment(this);
  }

  /** @param {string} id */
  getElementById(id) {
    return find(this.body, (n) => n.id === id);
  }

  addEventListener() {}

  removeEventListener() {}
}

/**
 * The first element under `root` (depth first, root included) for which `ok` holds.
 * @param {FakeNode} root @param {(n: FakeElement) => boolean} ok @returns {FakeElement | null}
 */
export function find(root, ok) {
  if (root instanceof FakeElement && ok(root)) return root;
  for (const c of root.childNodes) {
    const hit = find(c, ok);
    if (hit) return hit;
  }
  return null;
}

/** All elements under `root` for which `ok` holds. @param {FakeNode} root @param {(n: FakeElement) => boolean} ok */
export function findAll(root, ok, out = /** @type {FakeElement[]} */ ([])) {
  if (root instanceof FakeElement && ok(root)) out.push(root);
  for (const c of root.childNodes) findAll(c, ok, out);
  return out;
}

/**
 * Install a fresh document, `window` (with `__TAURI__` from `tauri` when given) and animation
 * frames that run only when the test calls `frames()`.
 * @param {{ invoke?: (cmd: string, args: Record<string, unknown>) => Promise<unknown> }} [tauri]
 */
export function installFakeDom(tauri) {
  const doc = new FakeDocument();
  /** @type {Map<number, () => void>} */
  const queued = new Map();
  let next = 0;
  const g = /** @type {Record<string, unknown>} */ (globalThis);
  g.document = doc;
  g.window = globalThis;
  g.requestAnimationFrame = (/** @type {() => void} */ fn) => {
    queued.set(++next, fn);
    return next;
  };
  g.cancelAnimationFrame = (/** @type {number} */ id) => queued.delete(id);
  g.getSelection = () => null;
  if (tauri?.invoke) {
    class Channel {
      /** @type {(m: unknown) => void} */
      onmessage = () => {};
    }
    g.__TAURI__ = { core: { invoke: tauri.invoke, Channel }, event: { listen: async () => () => {} } };
  }
  /** Run the animation frames asked for so far (and those they ask for, once). */
  const frames = () => {
    const now = [...queued.values()];
    queued.clear();
    for (const fn of now) fn();
  };
  return { doc, frames };
}
