/**
 * Finds which of many values occur in a text as whole values (Aho–Corasick). An occurrence counts
 * only where it does not continue a word: if the value starts (ends) with a word character
 * [A-Za-z0-9_], the text character before (after) it must not be one — the `\b` of a regex. So
 * port 80 is not in "8080" and /tmp/build-1 is not in /tmp/build-12, but /tmp/build-1 is in
 * /tmp/build-1/out and 80 is in "localhost:80". Stdout edges need
 * "does any value printed so far appear in this command's text" for every command; checking each
 * value with `includes` is O(commands × values), which is 10^8 on a 10,000-step trajectory.
 * The automaton makes it one pass per text, O(text length + matches).
 *
 * The trie lives in typed arrays (first-child / next-sibling lists, a direct table at the root):
 * tens of thousands of printed values make hundreds of thousands of nodes, and one object or Map
 * entry per node would cost more than the whole graph.
 */
export class SubstringMatcher {
  private readonly code: Uint16Array;
  private readonly firstChild: Int32Array;
  private readonly sibling: Int32Array;
  private readonly root = new Int32Array(65536).fill(-1);
  private readonly fail: Int32Array;
  /** Value id that ends exactly at this node, or -1. */
  private readonly terminal: Int32Array;
  /** Nearest proper suffix node that is terminal (dictionary link), or -1. */
  private readonly output: Int32Array;
  private readonly stamp: Int32Array;
  private round = 0;

  constructor(readonly values: readonly string[]) {
    let capacity = 1;
    for (const v of values) capacity += v.length;
    this.code = new Uint16Array(capacity);
    this.firstChild = new Int32Array(capacity).fill(-1);
    this.sibling = new Int32Array(capacity).fill(-1);
    this.fail = new Int32Array(capacity);
    this.terminal = new Int32Array(capacity).fill(-1);
    this.output = new Int32Array(capacity).fill(-1);
    const parent = new Int32Array(capacity);
    const depth = new Int32Array(capacity);
    let count = 1;
    values.forEach((value, id) => {
      let node = 0;
      for (let i = 0; i < value.length; i++) {
        const ch = value.charCodeAt(i);
        let child = this.child(node, ch);
        if (child === -1) {
          child = count++;
          this.code[child] = ch;
          parent[child] = node;
          depth[child] = depth[node] + 1;
          if (node === 0) this.root[ch] = child;
          else {
            this.sibling[child] = this.firstChild[node];
            this.firstChild[node] = child;
          }
        }
        node = child;
      }
      if (value.length > 0 && this.terminal[node] === -1) this.terminal[node] = id;
    });
    // Nodes in breadth-first order (counting sort by depth): a node's failure link then only needs
    // links of shallower nodes, which are final.
    let maxDepth = 0;
    for (let v = 0; v < count; v++) maxDepth = Math.max(maxDepth, depth[v]);
    const start = new Int32Array(maxDepth + 2);
    for (let v = 0; v < count; v++) start[depth[v] + 1]++;
    for (let d = 0; d <= maxDepth; d++) start[d + 1] += start[d];
    const order = new Int32Array(count);
    for (let v = 0; v < count; v++) order[start[depth[v]]++] = v;
    for (let i = 1; i < count; i++) {
      const v = order[i];
      const p = parent[v];
      if (p === 0) continue; // depth-1 nodes fail to the root
      const ch = this.code[v];
      let f = this.fail[p];
      let target = this.child(f, ch);
      while (target === -1 && f !== 0) {
        f = this.fail[f];
        target = this.child(f, ch);
      }
      this.fail[v] = target === -1 ? 0 : target;
      const fl = this.fail[v];
      this.output[v] = this.terminal[fl] !== -1 ? fl : this.output[fl];
    }
    this.stamp = new Int32Array(values.length);
  }

  /** Ids of the distinct values that occur in `text`, in order of first occurrence. */
  find(text: string): number[] {
    const found: number[] = [];
    if (this.values.length === 0) return found;
    const round = ++this.round;
    let node = 0;
    for (let i = 0; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      let target = this.child(node, ch);
      while (target === -1 && node !== 0) {
        node = this.fail[node];
        target = this.child(node, ch);
      }
      node = target === -1 ? 0 : target;
      for (let hit = this.terminal[node] !== -1 ? node : this.output[node]; hit !== -1; hit = this.output[hit]) {
        const id = this.terminal[hit];
        if (this.stamp[id] === round) continue;
        const value = this.values[id];
        const start = i - value.length + 1;
        if (start > 0 && isWord(value.charCodeAt(0)) && isWord(text.charCodeAt(start - 1))) continue;
        if (i + 1 < text.length && isWord(value.charCodeAt(value.length - 1)) && isWord(text.charCodeAt(i + 1))) continue;
        this.stamp[id] = round;
        found.push(id);
      }
    }
    return found;
  }

  private child(node: number, ch: number): number {
    if (node === 0) return this.root[ch];
    for (let c = this.firstChild[node]; c !== -1; c = this.sibling[c]) if (this.code[c] === ch) return c;
    return -1;
  }
}

/** [A-Za-z0-9_], as `\w` in a regex. */
export function isWord(code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 90) || (code >= 97 && code <= 122) || code === 95;
}
