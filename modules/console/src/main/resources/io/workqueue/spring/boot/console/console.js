// The reactive-workqueue console. Plain script, no build step, no dependency.
//
// One rule above all: every piece of data (queue names, keys, errors) reaches the page as a text
// node or a property, never as markup. Nothing here assigns innerHTML or uses insertAdjacentHTML,
// document.write or eval; the page's Content-Security-Policy forbids inline script besides.
// And every such piece is written through shown(), so that what an operator reads is what is stored.
'use strict';

(function () {
  const STATES = ['ready', 'delayed', 'leased', 'stalled', 'completed'];
  const PAGE_SIZE = 50;
  const meta = (name) => document.querySelector('meta[name="' + name + '"]').content;
  const TOKEN_HEADER = meta('workqueue-token-header');
  const TOKEN = meta('workqueue-token');
  const SECURITY_HEADER = meta('workqueue-security-header');
  const SECURITY_TOKEN = meta('workqueue-security-token');
  const ACTIONS = meta('workqueue-actions') === 'true';
  const view = document.getElementById('view');
  const crumbs = document.getElementById('crumbs');
  const message = document.getElementById('message');
  let refresh = null;

  // ------------------------------------------------------------------ building the page as text

  /** An element with attributes (set as properties) and children (strings become text nodes). */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    Object.entries(props || {}).forEach(([name, value]) => {
      if (name === 'dataset') {
        Object.assign(node.dataset, value);
      } else if (name === 'onclick') {
        node.addEventListener('click', value);
      } else {
        node[name] = value;
      }
    });
    children.flat().forEach((child) => {
      if (child !== null && child !== undefined) {
        node.append(child instanceof Node ? child : document.createTextNode(String(child)));
      }
    });
    return node;
  }

  // ------------------------------------------------------------------ data as an operator must read it

  // Characters that draw nothing or reorder what surrounds them, so that two different keys look
  // alike: control characters (C0, DEL, C1), format characters (category Cf: the bidirectional
  // controls U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C, the zero-width characters, the
  // invisible operators, U+FEFF, U+00AD, tags), line and paragraph separators, unpaired surrogates,
  // variation selectors, and the few letters and marks that are blank by design (Hangul fillers,
  // the combining grapheme joiner, Khmer inherent vowels, Mongolian selectors, the blank braille cell).
  const HIDDEN = /^[\p{Cc}\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u034F\u115F\u1160\u17B4\u17B5\u180B-\u180F\u2800\u3164\uFFA0\uFE00-\uFE0F\u{E0100}-\u{E01EF}]$/u;
  // Text or emoji presentation after an emoji is what that selector is for: drawing the heart in
  // "❤️" as an emoji. Shown as it is; anywhere else a selector is marked like any hidden character.
  const PRESENTATION_SELECTOR = /^[\uFE0E\uFE0F]$/u;
  const EMOJI = /^\p{Emoji}$/u;
  const BIDI = /^[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]$/u;
  const HIDDEN_NAMES = {
    0x09: 'CHARACTER TABULATION', 0x0A: 'LINE FEED', 0x0D: 'CARRIAGE RETURN', 0xAD: 'SOFT HYPHEN',
    0x061C: 'ARABIC LETTER MARK', 0x200B: 'ZERO WIDTH SPACE', 0x200C: 'ZERO WIDTH NON-JOINER',
    0x200D: 'ZERO WIDTH JOINER', 0x200E: 'LEFT-TO-RIGHT MARK', 0x200F: 'RIGHT-TO-LEFT MARK',
    0x2028: 'LINE SEPARATOR', 0x2029: 'PARAGRAPH SEPARATOR', 0x202A: 'LEFT-TO-RIGHT EMBEDDING',
    0x202B: 'RIGHT-TO-LEFT EMBEDDING', 0x202C: 'POP DIRECTIONAL FORMATTING', 0x202D: 'LEFT-TO-RIGHT OVERRIDE',
    0x202E: 'RIGHT-TO-LEFT OVERRIDE', 0x2060: 'WORD JOINER', 0x2061: 'FUNCTION APPLICATION',
    0x2062: 'INVISIBLE TIMES', 0x2063: 'INVISIBLE SEPARATOR', 0x2064: 'INVISIBLE PLUS',
    0x2066: 'LEFT-TO-RIGHT ISOLATE', 0x2067: 'RIGHT-TO-LEFT ISOLATE', 0x2068: 'FIRST STRONG ISOLATE',
    0x2069: 'POP DIRECTIONAL ISOLATE', 0xFEFF: 'ZERO WIDTH NO-BREAK SPACE (byte order mark)'
  };

  function hidden(ch, previous) {
    if (PRESENTATION_SELECTOR.test(ch) && EMOJI.test(previous)) {
      return false;
    }
    return HIDDEN.test(ch);
  }

  /**
   * A key, queue name, table prefix or error as an operator must read it: in a <bdi>, so that its
   * direction cannot reorder the text around it, with every hidden character (see HIDDEN) shown as
   * a marked code point, "U+202E", drawn by the style sheet in front of the character itself. The
   * character stays where it was, alone in an isolate of its own where it can reorder nothing: the
   * element's text is still exactly the stored text (what a copy, a test or an action reads), while
   * the page shows "invoice‹U+202E›fdp.exe" rather than "invoicedneexe.pdf". Every view writes data
   * through here.
   */
  function shown(text) {
    const out = document.createElement('bdi');
    let plain = '';
    let previous = '';
    for (const ch of String(text)) {
      if (hidden(ch, previous)) {
        if (plain) {
          out.append(plain);
          plain = '';
        }
        const point = ch.codePointAt(0);
        const code = 'U+' + point.toString(16).toUpperCase().padStart(4, '0');
        const kind = BIDI.test(ch) ? 'a bidirectional control' : /^\p{Cc}$/u.test(ch) ? 'a control character'
          : 'an invisible character';
        const marker = el('span', {
          className: 'hidden-char',
          title: code + (HIDDEN_NAMES[point] ? ' ' + HIDDEN_NAMES[point] : '') + ': ' + kind + ', shown as its code point'
        }, ch);
        marker.dataset.codePoint = code;
        out.append(marker);
      } else {
        plain += ch;
      }
      previous = ch;
    }
    if (plain) {
      out.append(plain);
    }
    return out;
  }

  function link(text, route, params) {
    return el('a', { href: '#/' + route + (params ? '?' + new URLSearchParams(params).toString() : '') }, text);
  }

  function show(...nodes) {
    view.replaceChildren(...nodes);
  }

  /**
   * Puts a message in the banner, or hides the banner when there is none. Parts are the console's
   * own words (strings) and data already written through shown(). `kind` says what the message is
   * about, which decides how long it stays: 'load' (a view that did not load: gone once a view
   * loads), 'action' (what an action did and what the item is now: gone when the view changes or
   * another action starts), 'action-error' (why an action failed: the same).
   */
  function say(parts, kind) {
    const list = [].concat(parts).filter((part) => part !== null && part !== undefined && part !== '');
    message.replaceChildren(...list.map((part) => part instanceof Node ? part : document.createTextNode(String(part))));
    message.className = kind === 'load' || kind === 'action-error' ? 'error' : '';
    message.dataset.kind = list.length ? kind : '';
    message.hidden = list.length === 0;
  }

  function quiet() {
    say([], '');
  }

  function duration(ms) {
    if (ms === null || ms === undefined) {
      return '';
    }
    const sign = ms < 0 ? '-' : '';
    let s = Math.abs(ms) / 1000;
    if (s < 1) return sign + Math.round(s * 1000) + ' ms';
    if (s < 60) return sign + s.toFixed(1) + ' s';
    const units = [['d', 86400], ['h', 3600], ['min', 60], ['s', 1]];
    const parts = [];
    for (const [unit, size] of units) {
      if (s >= size && parts.length < 2) {
        parts.push(Math.floor(s / size) + ' ' + unit);
        s %= size;
      }
    }
    return sign + parts.join(' ');
  }

  const count = (n) => Number(n).toLocaleString('en-US');

  function tableName(prefix) {
    return prefix === '' ? '(default)' : shown(prefix);
  }

  /** An item's states as a phrase ("ready", "delayed and stalled"), or "gone" for no item. */
  function statesNow(item) {
    return item ? item.states.join(' and ') : 'gone';
  }

  // ------------------------------------------------------------------ talking to the server

  async function get(path, params) {
    const response = await fetch('api/' + path + '?' + new URLSearchParams(params || {}).toString(),
      { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw failure(response, body);
    }
    return body;
  }

  /** The error of a refused request: the server's reason (it may quote a key: write it through shown()) and status. */
  function failure(response, body) {
    const error = new Error(body.error || ('HTTP ' + response.status));
    error.status = response.status;
    return error;
  }

  async function post(path, body) {
    const headers = { 'Content-Type': 'application/json', Accept: 'application/json' };
    headers[TOKEN_HEADER] = TOKEN;
    if (SECURITY_HEADER) {
      headers[SECURITY_HEADER] = SECURITY_TOKEN;
    }
    const response = await fetch('api/' + path, {
      method: 'POST', headers, body: JSON.stringify(body), credentials: 'same-origin'
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      throw failure(response, answer);
    }
    return answer;
  }

  /**
   * A button that asks once more before it acts ("Remove" → "Really remove?"). When it acts, the
   * banner is emptied first, so that an earlier action's outcome is never read as this one's; a
   * failure is said in the banner and leaves the button ready to try again.
   */
  function confirmingButton(label, danger, act) {
    const button = el('button', { type: 'button', className: danger ? 'danger' : '' }, label);
    let armed = !danger;
    button.addEventListener('click', async () => {
      if (!armed) {
        armed = true;
        button.textContent = 'Really ' + label.toLowerCase() + '?';
        return;
      }
      button.disabled = true;
      quiet();
      try {
        await act();
      } catch (e) {
        say(shown(e.message), 'action-error');
        button.disabled = false;
      }
    });
    return button;
  }

  // ------------------------------------------------------------------ views

  async function queuesView() {
    crumbs.replaceChildren(document.createTextNode('All queues'));
    const data = await get('queues');
    const rows = data.queues.map((q) => el('tr', { className: 'queue', dataset: { queue: q.queue, table: q.table } },
      el('td', { className: 'key' }, link(shown(q.queue), 'queue', { table: q.table, queue: q.queue, state: q.stalled > 0 ? 'stalled' : 'ready' })),
      el('td', {}, tableName(q.table)),
      el('td', { className: 'num' }, count(q.depth)),
      el('td', { className: 'num' }, link(count(q.ready), 'queue', { table: q.table, queue: q.queue, state: 'ready' })),
      el('td', { className: 'num' }, link(count(q.leased), 'queue', { table: q.table, queue: q.queue, state: 'leased' })),
      el('td', { className: 'num' + (q.stalled > 0 ? ' stalled' : '') },
        link(count(q.stalled), 'queue', { table: q.table, queue: q.queue, state: 'stalled' })),
      el('td', { className: 'num' }, link(count(q.completed) + (q.completedCapped ? '+' : ''), 'queue', { table: q.table, queue: q.queue, state: 'completed' })),
      el('td', { className: 'num' }, q.ready > 0 ? duration(q.oldestReadyAgeMillis) : '—',
        q.pausedAt ? el('div', { className: 'paused', title: 'paused at ' + q.pausedAt }, 'paused: nothing is claimed') : null),
      el('td', { className: 'num muted' }, q.registered ? String(q.maxAttempts || '∞') : '∞ (not configured here)'),
      ACTIONS ? el('td', { className: 'actions' }, pauseButton(q)) : null));
    const age = data.queues.length ? Math.max(...data.queues.map((q) => q.statsAgeMillis)) : 0;
    show(
      el('h1', {}, 'Queues'),
      el('table', { id: 'queues' },
        el('thead', {}, el('tr', {},
          el('th', {}, 'queue'), el('th', {}, 'table prefix'), el('th', { className: 'num' }, 'depth'),
          el('th', { className: 'num' }, 'ready'), el('th', { className: 'num' }, 'leased'),
          el('th', { className: 'num' }, 'stalled'), el('th', { className: 'num' }, 'completed'),
          el('th', { className: 'num' }, 'oldest ready'), el('th', { className: 'num' }, 'max attempts'),
          ACTIONS ? el('th', {}, '') : null)),
        el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colSpan: 10, className: 'muted' }, 'No queues.')))),
      el('p', { className: 'muted', id: 'stats-age' }, 'Stats as of ' + duration(age) + ' ago (each is the queue\'s own ' +
        'stats() read, refreshed in the background at most every few seconds; this list follows). ' +
        'Depth counts every pending item.'));
  }

  /**
   * Pause or resume one queue for the whole fleet: a pause asks once more, since every instance
   * stops claiming; the list is read again before the banner says what happened.
   */
  function pauseButton(q) {
    const pausing = !q.pausedAt;
    const button = confirmingButton(pausing ? 'Pause' : 'Resume', pausing, async () => {
      await post(pausing ? 'pause' : 'resume', { table: q.table, queue: q.queue });
      await route();
      say([pausing ? 'Paused ' : 'Resumed ', shown(q.queue),
        pausing ? ': no instance claims from it until it is resumed.' : ': claims hand out its items again.'], 'action');
    });
    button.className += ' pause';
    return button;
  }

  function stateTabs(params) {
    return el('div', { className: 'tabs', id: 'states' }, STATES.map((state) => {
      const tab = link(state, 'queue', { table: params.table, queue: params.queue, state });
      tab.dataset.state = state;
      if (state === params.state) {
        tab.className = 'current';
      }
      return tab;
    }));
  }

  function queueCrumbs(params, last) {
    crumbs.replaceChildren(link('All queues', ''), document.createTextNode(' › '),
      link(shown(params.queue), 'queue', { table: params.table, queue: params.queue, state: params.state || 'ready' }),
      document.createTextNode(last ? ' › ' : ''), last ? document.createTextNode(last) : '');
  }

  async function itemsView(params) {
    const state = STATES.includes(params.state) ? params.state : 'ready';
    queueCrumbs({ ...params, state });
    // A page of a sparse state (a few stalled items in a long queue) may come back short: each
    // request reads a bounded stretch of the queue. Read on, request after request, until the page
    // is full, the queue ends, or a second and a half has passed; each request stays cheap.
    const started = Date.now();
    const page = { items: [], next: params.after || '' };
    let requests = 0;
    do {
      const part = await get('items', { table: params.table || '', queue: params.queue, state, after: page.next || '',
        limit: PAGE_SIZE - page.items.length });
      page.items.push(...part.items);
      page.next = part.next;
      requests++;
    } while (page.next && page.items.length < PAGE_SIZE && Date.now() - started < 1500);
    const completed = state === 'completed';
    const header = el('tr', {}, el('th', {}, 'key'), el('th', { className: 'num' }, 'priority'),
      el('th', { className: 'num' }, 'attempts'), el('th', { className: 'num' }, 'age'),
      el('th', { className: 'num' }, completed ? 'completed' : state === 'leased' ? 'lease left' : 'available'),
      el('th', {}, 'last error'), ACTIONS ? el('th', {}, '') : null);
    const rows = page.items.map((item) => el('tr', { className: 'item', dataset: { key: item.storedKey } },
      el('td', { className: 'key' }, link(shown(item.key), 'item', { table: params.table || '', queue: params.queue, key: item.storedKey }),
        item.keyDecodingError ? el('div', { className: 'error' }, 'does not decode: ', shown(item.keyDecodingError)) : null),
      el('td', { className: 'num' }, item.priority),
      el('td', { className: 'num' }, item.attempts),
      el('td', { className: 'num' }, duration(item.ageMillis)),
      el('td', { className: 'num' }, completed ? duration(item.completedAgoMillis) + ' ago'
        : state === 'leased' ? duration(item.leaseRemainingMillis)
          : item.availableInMillis > 0 ? 'in ' + duration(item.availableInMillis) : 'for ' + duration(-item.availableInMillis)),
      el('td', { className: 'error' }, item.lastError ? shown(item.lastError) : ''),
      ACTIONS ? el('td', { className: 'actions' }, itemActions(params, item)) : null));
    const next = page.next
      ? el('button', { type: 'button', id: 'next', onclick: () => go('queue', { table: params.table || '', queue: params.queue, state, after: page.next }) }, 'Next page')
      : null;
    const first = params.after
      ? el('button', { type: 'button', id: 'first', onclick: () => go('queue', { table: params.table || '', queue: params.queue, state }) }, 'First page')
      : null;
    const purge = ACTIONS && completed ? confirmingButton('Purge completed', true, async () => {
      let total = 0;
      for (let i = 0; i < 1000; i++) {
        const answer = await post('purge', { table: params.table || '', queue: params.queue });
        total += answer.deleted;
        say('Purged ' + count(total) + ' completed items…', 'action');
        if (answer.deleted < answer.batch) break;
      }
      await route();
      say('Purged ' + count(total) + ' completed items.', 'action');
    }) : null;
    if (purge) purge.id = 'purge';
    show(el('h1', { className: 'key' }, shown(params.queue)), stateTabs({ ...params, state }),
      el('table', { id: 'items' }, el('thead', {}, header),
        el('tbody', {}, rows.length ? rows : el('tr', {}, el('td', { colSpan: 7, className: 'muted' },
          page.next ? 'None in this stretch of the queue; the next page reads on.' : 'No ' + state + ' items.')))),
      el('div', { className: 'bar' }, first, next, purge,
        page.next && page.items.length < PAGE_SIZE ? el('span', { className: 'muted' },
          'Read ' + requests + ' stretches of the queue in ' + duration(Date.now() - started) +
          ' and stopped; the next page reads on from there.') : null));
  }

  /**
   * Retry and remove for one item, addressed by its stored key exactly as the API gave it. After
   * either, the view is read and drawn again, and only then does the banner say what the action did
   * and what the item is now, as that read found it: the banner never describes the page before.
   */
  function itemActions(params, item) {
    const actions = [];
    const queue = { table: params.table || '', queue: params.queue };
    // The item view reads the item itself and gives it back; after any other view, one more read.
    const redrawn = async () => {
      const read = await route();
      return read !== undefined ? read : get('item', { ...queue, key: item.storedKey })
        .catch((e) => { if (e.status === 404) return null; throw e; });
    };
    const retryable = (item.states.includes('stalled') || item.states.includes('delayed')) && !item.states.includes('leased');
    if (retryable) {
      const retry = confirmingButton('Retry', false, async () => {
        const answer = await post('retry', { ...queue, keys: [item.storedKey] });
        const now = await redrawn();
        say(answer.changed.length
          ? ['Retried ', shown(item.key), ': due now, attempts reset. Now ' + statesNow(now) + '.']
          : ['Nothing to retry: ', shown(item.key), ' changed meanwhile. Now ' + statesNow(now) + '.'], 'action');
      });
      retry.className = 'retry';
      actions.push(retry);
    }
    const remove = confirmingButton('Remove', true, async () => {
      const answer = await post('remove', { ...queue, keys: [item.storedKey] });
      const now = await redrawn();
      say([answer.changed.length ? 'Removed ' : 'Nothing to remove: ', shown(item.key),
        answer.changed.length ? '.' : ' was already gone.',
        // Enqueued again between the removal and the read: say so rather than "gone".
        now ? ' Now ' + statesNow(now) + ' (enqueued again).' : ''], 'action');
    });
    remove.classList.add('remove');
    actions.push(remove);
    return actions;
  }

  /** The item in detail; gives back the item as read, or null when there is no such item. */
  async function itemView(params) {
    queueCrumbs({ ...params, state: 'ready' }, 'item');
    let item;
    try {
      item = await get('item', { table: params.table || '', queue: params.queue, key: params.key });
    } catch (e) {
      show(el('h1', {}, 'Item'), el('p', { className: 'muted' }, shown(e.message), ' (it may have been removed or reaped)'));
      return e.status === 404 ? null : undefined;
    }
    const rows = [
      ['key', el('span', { className: 'key', id: 'item-key' }, shown(item.key))],
      ['stored key', el('span', { className: 'key', id: 'item-stored-key' }, shown(item.storedKey))],
      item.keyDecodingError ? ['does not decode', el('span', { className: 'error' }, shown(item.keyDecodingError))] : null,
      ['state', el('span', { id: 'item-states' }, item.states.map((s) => el('span', { className: 'badge ' + s }, s)))],
      ['priority', item.priority],
      ['attempts', item.attempts],
      ['last error', el('span', { className: 'error', id: 'item-error' }, item.lastError ? shown(item.lastError) : '—')],
      ['enqueued', duration(item.ageMillis) + ' ago'],
      ['available', item.availableInMillis > 0 ? 'in ' + duration(item.availableInMillis) : 'for ' + duration(-item.availableInMillis)],
      item.leaseRemainingMillis !== null ? ['lease left', duration(item.leaseRemainingMillis)] : null,
      item.completedAgoMillis !== null ? ['completed', duration(item.completedAgoMillis) + ' ago'] : null,
      item.leaseLapsed ? ['lease', 'lapsed: its worker died or was too slow; the next claim is a reclaim'] : null,
      item.requeueRequested ? ['enqueued during its lease', 'yes: it runs once more after the current run'] : null
    ].filter(Boolean);
    show(el('h1', {}, 'Item of ', el('span', { className: 'key' }, shown(params.queue))),
      el('dl', { className: 'detail' }, rows.flatMap(([name, value]) => [el('dt', {}, name), el('dd', {}, value)])),
      ACTIONS ? el('div', { className: 'bar', id: 'actions' }, itemActions(params, item)) : null,
      el('p', { className: 'muted' }, 'Ages are on the database clock, as of this read.'));
    return item;
  }

  // ------------------------------------------------------------------ routing

  function go(routeName, params) {
    location.hash = '#/' + routeName + '?' + new URLSearchParams(params).toString();
  }

  /** The view the address names: 'queues', 'queue' or 'item', with its parameters. */
  function here() {
    const hash = location.hash.replace(/^#\/?/, '');
    const [name, query] = [hash.split('?')[0], hash.includes('?') ? hash.slice(hash.indexOf('?') + 1) : ''];
    const params = Object.fromEntries(new URLSearchParams(query));
    const viewName = name === 'queue' && params.queue ? 'queue'
      : name === 'item' && params.queue && params.key !== undefined ? 'item' : 'queues';
    return { viewName, params };
  }

  /**
   * Reads and draws the view the address names; gives back what the view gives (the item view: the
   * item as read). A view that does not load leaves its reason in the banner, and the next view
   * that loads takes it away. The queue list follows its numbers: it is read again a few seconds
   * after each attempt, loaded or not, while the page is visible.
   */
  async function route() {
    clearTimeout(refresh);
    const { viewName, params } = here();
    let result;
    try {
      result = viewName === 'queue' ? await itemsView(params)
        : viewName === 'item' ? await itemView(params) : await queuesView();
      document.body.dataset.loaded = viewName;
      if (message.dataset.kind === 'load') {
        quiet();
      }
    } catch (e) {
      say(shown(e.message), 'load');
    }
    if (viewName === 'queues' && here().viewName === 'queues') {
      refresh = setTimeout(() => {
        if (!document.hidden) {
          route();
        }
      }, 5000);
    }
    return result;
  }

  document.getElementById('mode').textContent = ACTIONS ? 'actions enabled' : 'read-only';
  window.addEventListener('hashchange', () => {
    quiet();
    delete document.body.dataset.loaded;
    route();
  });
  // A list that stopped following while the page was hidden catches up when it is seen again.
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && here().viewName === 'queues') {
      route();
    }
  });
  route();
})();
