/* The HTML view of a graph (tt_render.h: tt_graph_write_html): one file
 * that needs no network, the graph drawn by graphviz as inline SVG (named
 * scopes as clusters whose SVG groups carry the scope's path as their id,
 * "scope:layer0/attn", as dot.c writes them), each node's details as
 * JSON, and a small script that folds scopes, shows a node and searches.
 * Public API only, as render.c. */
#include "render_impl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* s as a JSON string's inside; '<' as \u003c so that no "</script>" in a
 * name or file can end the script early. */
static void put_json(FILE *f, const char *s)
{
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c == '<')
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
}

static const char *kind_name(tt_node_kind k)
{
    switch (k) {
    case TT_NODE_PLACEHOLDER: return "input";
    case TT_NODE_CONSTANT: return "constant";
    case TT_NODE_OP: return "op";
    case TT_NODE_OUTPUT: return "output";
    }
    return "?";
}

/* One node's details: {"name", "kind", "op", "schema", "args", "values",
 * "loc", "scope"}. */
static void put_node(FILE *f, const tt_graph *g, int i)
{
    tt_node_kind kind = tt_graph_node_kind(g, i);
    const tt_op *op = kind == TT_NODE_OP ? tt_graph_node_op(g, i) : NULL;
    fprintf(f, "{\"name\":\"");
    put_json(f, tt_graph_node_name(g, i));
    fprintf(f, "\",\"kind\":\"%s\",\"op\":\"", kind_name(kind));
    put_json(f, op ? tt_op_name(op) : "");
    char schema[1024] = "";
    if (op && tt_op_schema(op))
        tt_schema_print(tt_op_schema(op), schema, sizeof schema);
    fprintf(f, "\",\"schema\":\"");
    put_json(f, schema);
    fprintf(f, "\",\"args\":[");
    for (int a = 0; a < tt_graph_node_num_args(g, i); a++) {
        char *text = tt_graph_node_arg_text(g, i, a);
        fprintf(f, "%s\"", a ? "," : "");
        put_json(f, text ? text : "?");
        fprintf(f, "\"");
        free(text);
    }
    fprintf(f, "],\"values\":[");
    for (int k = 0; k < tt_graph_node_num_outputs(g, i); k++) {
        const tt_tensor *t = tt_graph_node_value(g, i, k);
        char what[160] = "none", strides[120] = "";
        if (t) {
            tt_describe(t, what, sizeof what);
            tt_strides_str(t, strides, sizeof strides);
        }
        fprintf(f, "%s\"", k ? "," : "");
        put_json(f, what);
        if (t) {
            fprintf(f, ", strides ");
            put_json(f, strides);
        }
        fprintf(f, "\"");
    }
    tt_srcloc loc = tt_graph_node_loc(g, i);
    char where[512] = "";
    if (loc.file)
        snprintf(where, sizeof where, "%s:%d in %s", loc.file, loc.line,
                 loc.func ? loc.func : "?");
    fprintf(f, "],\"loc\":\"");
    put_json(f, where);
    fprintf(f, "\",\"scope\":\"");
    put_json(f, tt_graph_node_scope(g, i));
    fprintf(f, "\"}");
}

/* The page's style and script. The script reads the data above it (G),
 * finds each node's and scope's SVG group by its title and id, and keeps
 * the state in `folded` and `view`; the URL's fragment sets the first
 * state (#view=layers, #fold=all, #fold=a,b, #open=layer1, #find=text,
 * joined with '&'). It writes the number of nodes shown to body's
 * data-visible, which the browser test reads. */
static const char page_style[] =
    "body{margin:0;font:13px Helvetica,sans-serif;display:flex;height:100vh}"
    "#side{width:300px;flex:none;overflow:auto;border-right:1px solid #ccc;padding:8px;"
    "box-sizing:border-box}"
    "#pic{flex:1;overflow:auto}#pic svg{display:block}.fit svg{width:100%;height:auto}"
    "#scopes div{cursor:pointer;white-space:nowrap}#scopes .folded{color:#3d85c6;font-weight:bold}"
    "#info{margin-top:10px;white-space:pre-wrap;font-family:monospace;font-size:12px}"
    ".hit polygon,.hit ellipse,.hit path{stroke:#e53935;stroke-width:3px}"
    "g.node{cursor:pointer}input{width:100%;box-sizing:border-box}button{margin:2px}";

static const char page_script[] =
    "const folded=new Set();let view='ops';\n"
    "const views={};\n"
    "for(const d of document.querySelectorAll('#pic > div')){const v={div:d,nodes:[],boxes:[],edges:[]};\n"
    " for(const g of d.querySelectorAll('g.node')){const t=g.querySelector('title').textContent;\n"
    "  if(t[0]==='n'){const i=+t.slice(1);v.nodes[i]=g;g.addEventListener('click',()=>show(i));}\n"
    "  else{const a=g.querySelector('a');const s=a?a.getAttribute('xlink:title').split(' to ')[0]:'';\n"
    "   v.boxes.push(g);g.addEventListener('click',()=>{setView('ops');folded.clear();\n"
    "    G.scopes.filter(x=>!x.includes('/')&&!within(s,x)).forEach(x=>folded.add(x));apply();\n"
    "    const c=document.getElementById('scope:'+s);if(c)c.scrollIntoView();});}}\n"
    " for(const g of d.querySelectorAll('g.edge')){const t=g.querySelector('title').textContent.split('->');\n"
    "  v.edges.push([g,t[0][0]==='n'?+t[0].slice(1):-1,t[1][0]==='n'?+t[1].slice(1):-1]);}\n"
    " views[d.dataset.view]=v;}\n"
    "const within=(s,f)=>s===f||s.startsWith(f+'/');\n"
    "const hiddenBy=s=>{for(const f of folded)if(s&&within(s,f))return f;return null;};\n"
    "const hidden=i=>i>=0&&hiddenBy(G.nodes[i].scope)!==null;\n"
    "const count=s=>G.nodes.filter(n=>n.scope&&within(n.scope,s)).length;\n"
    "function apply(){\n"
    " const v=views[view];let shown=0;\n"
    " for(const k in views)views[k].div.style.display=k===view?'':'none';\n"
    " if(view==='ops'){\n"
    "  v.nodes.forEach((g,i)=>{if(!g)return;const h=hidden(i);g.style.display=h?'none':'';if(!h)shown++;});\n"
    "  for(const [g,a,b] of v.edges)g.style.display=hidden(a)&&hidden(b)?'none':'';\n"
    "  for(const s of G.scopes){const c=document.getElementById('scope:'+s);if(!c)continue;\n"
    "   const f=hiddenBy(s),path=c.querySelector('path,polygon');\n"
    "   c.style.display=f!==null&&f!==s?'none':'';\n"
    "   if(path)path.setAttribute('fill',f===s?'#dae8fc':'none');\n"
    "   const t=c.querySelector('text');\n"
    "   if(t)t.textContent=s.split('/').pop()+(f===s?' ('+count(s)+' ops, folded)':'');}\n"
    " }else shown=v.nodes.filter(g=>g).length+v.boxes.length;\n"
    " for(const d of document.querySelectorAll('#scopes div'))d.className=folded.has(d.dataset.scope)?'folded':'';\n"
    " for(const b of document.querySelectorAll('#views button'))b.disabled=b.dataset.view===view;\n"
    " document.body.dataset.visible=shown;document.body.dataset.view=view;\n"
    " document.getElementById('count').textContent=shown+(view==='ops'?' of '+G.nodes.length+' nodes shown':' nodes and boxes');\n"
    "}\n"
    "function setView(k){if(views[k])view=k;apply();}\n"
    "function toggle(s){setView('ops');if(folded.has(s))folded.delete(s);else folded.add(s);apply();}\n"
    "function openTo(s){for(const f of [...folded])if(within(s,f))folded.delete(f);}\n"
    "function show(i){const n=G.nodes[i];document.getElementById('info').textContent=\n"
    " n.name+' ('+n.kind+')\\n'+(n.op?n.op+'\\n'+n.schema+'\\n':'')+(n.args.length?'args: '+n.args.join(', ')+'\\n':'')+\n"
    " n.values.map((v,k)=>'out '+k+': '+v).join('\\n')+(n.loc?'\\n'+n.loc:'')+(n.scope?'\\nscope '+n.scope:'');}\n"
    "function find(text){const q=text.toLowerCase();let hits=0;if(q)view='ops';\n"
    " G.nodes.forEach((n,i)=>{const m=q!==''&&(n.op+' '+n.name+' '+n.loc).toLowerCase().includes(q);\n"
    "  for(const k in views){const g=views[k].nodes[i];if(g)g.classList.toggle('hit',m);}\n"
    "  if(m){hits++;if(n.scope)openTo(n.scope);}});\n"
    " apply();document.getElementById('hits').textContent=q?hits+' found':'';}\n"
    "const list=document.getElementById('scopes');\n"
    "for(const s of G.scopes){const d=document.createElement('div');d.dataset.scope=s;\n"
    " d.style.paddingLeft=(s.split('/').length-1)*12+'px';d.textContent=s.split('/').pop()+' ('+count(s)+')';\n"
    " d.addEventListener('click',()=>toggle(s));list.appendChild(d);}\n"
    "for(const s of G.scopes){const c=document.getElementById('scope:'+s);if(c)c.addEventListener('click',e=>{e.stopPropagation();toggle(s);});}\n"
    "const vb=document.getElementById('views');\n"
    "for(const k in views){const b=document.createElement('button');b.dataset.view=k;b.textContent=k;\n"
    " b.addEventListener('click',()=>setView(k));vb.appendChild(b);}\n"
    "const fit=document.createElement('button');fit.textContent='fit / actual size';\n"
    "fit.addEventListener('click',()=>document.getElementById('pic').classList.toggle('fit'));vb.appendChild(fit);\n"
    "document.getElementById('find').addEventListener('input',e=>find(e.target.value));\n"
    "const want=new URLSearchParams(location.hash.slice(1));\n"
    "for(const f of (want.get('fold')||'').split(',').filter(x=>x))\n"
    " if(f==='all')G.scopes.filter(s=>!s.includes('/')).forEach(s=>folded.add(s));else folded.add(f);\n"
    "for(const o of (want.get('open')||'').split(',').filter(x=>x))openTo(o);\n"
    "if(want.get('view'))view=want.get('view');\n"
    "apply();\n"
    "if(want.get('find')){document.getElementById('find').value=want.get('find');find(want.get('find'));}\n";

/* Every scope path the nodes use and each path enclosing one, once, in
 * the nodes' order: what the side list shows. */
static void put_scopes(FILE *f, const tt_graph *g)
{
    int n = tt_graph_num_nodes(g), count = 0;
    const char **seen = calloc((size_t)(n ? n : 1) * 33, sizeof *seen);
    size_t *lens = calloc((size_t)(n ? n : 1) * 33, sizeof *lens);
    fprintf(f, "[");
    for (int i = 0; seen && lens && i < n; i++) {
        const char *s = tt_graph_node_scope(g, i);
        for (size_t len = 0; s && len <= strlen(s); len++) {
            if (s[len] != '/' && s[len] != '\0')
                continue;
            bool known = false;
            for (int k = 0; k < count && !known; k++)
                known = lens[k] == len && !strncmp(seen[k], s, len);
            if (known)
                continue;
            seen[count] = s;
            lens[count] = len;
            fprintf(f, "%s\"", count++ ? "," : "");
            char path[256];
            snprintf(path, sizeof path, "%.*s", (int)len, s);
            put_json(f, path);
            fprintf(f, "\"");
        }
    }
    fprintf(f, "]");
    free(seen);
    free(lens);
}

tt_status tt_graph_write_html(const tt_graph *g, const char *path)
{
    const char *fn = "tt_graph_write_html";
    if (!g)
        return tt_error(TT_EINVAL, "%s: argument 'graph' (#1) is NULL", fn);
    if (!path || !*path)
        return tt_error(TT_EINVAL, "%s: argument 'path' (#2) expects a file name, got %s", fn,
                        path ? "\"\"" : "NULL");
    FILE *f = fopen(path, "w");
    if (!f)
        return tt_error(TT_EINVAL, "%s: argument 'path' (#2): cannot write \"%s\": %s", fn, path,
                        strerror(errno));
    /* The views: every op; with scopes, each top-level scope as one box
     * ("layers"), and runs of identical ones merged ("repeats"). */
    static const char *const names[] = {"ops", "layers", "repeats"};
    bool scoped = false;
    for (int i = 0; i < tt_graph_num_nodes(g) && !scoped; i++)
        scoped = tt_graph_node_scope(g, i) != NULL;
    char *svg[3] = {0};
    tt_status st = TT_OK;
    for (int k = 0; k < (scoped ? 3 : 1) && !st; k++)
        st = tt__render_svg_text(fn, k == 0   ? tt_graph_to_dot(g)
                                     : k == 1 ? tt_graph_to_dot_collapsed(g, 1)
                                              : tt_graph_to_dot_merged(g, 1),
                                 &svg[k]);
    if (!st) {
        fprintf(f, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>tensortrace "
                   "graph, %d nodes</title>\n<style>%s</style></head>\n<body>\n<div id=\"side\">"
                   "<input id=\"find\" placeholder=\"find an op, a name or file:line\">"
                   "<div id=\"hits\"></div><div id=\"count\"></div><div id=\"views\"></div>"
                   "<h4>Scopes (click to fold)</h4><div id=\"scopes\"></div>"
                   "<div id=\"info\">Click a node for its details.</div></div>\n<div id=\"pic\" "
                   "class=\"fit\">\n", tt_graph_num_nodes(g), page_style);
        for (int k = 0; k < 3 && svg[k]; k++) {
            /* graphviz's prologue (<?xml ...>, the DOCTYPE) has no place in HTML */
            const char *start = strstr(svg[k], "<svg");
            fprintf(f, "<div data-view=\"%s\">%s</div>\n", names[k], start ? start : "");
        }
        fprintf(f, "</div>\n<script>\nconst G={\"nodes\":[");
        for (int i = 0; i < tt_graph_num_nodes(g); i++) {
            fprintf(f, i ? ",\n" : "\n");
            put_node(f, g, i);
        }
        fprintf(f, "],\n\"scopes\":");
        put_scopes(f, g);
        fprintf(f, "};\n%s</script>\n</body></html>\n", page_script);
    }
    for (int k = 0; k < 3; k++)
        free(svg[k]);
    bool bad = ferror(f);
    if (fclose(f) != 0 || bad)
        st = st ? st : tt_error(TT_EINVAL, "%s: writing \"%s\" failed: %s", fn, path,
                                strerror(errno));
    if (st)
        remove(path);
    return st;
}
