//! The crate's layering, read from its sources: `hop/` and `tunnel/` are leaves (they never name the worker, the
//! snapshot or the tracer, not even in a doc link), and the crate's top-level modules import each other without a
//! cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The modules a leaf must not name.
const ABOVE_LEAVES: [&str; 3] = ["worker", "snapshot", "trace"];

/// The directories under `src/` that hold leaves.
const LEAVES: [&str; 2] = ["hop", "tunnel"];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The crate modules a piece of source names: `crate::X` paths, and the first names of grouped imports
/// (`use crate::{X, Y::Z}`).
fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        if text[..i]
            .chars()
            .next_back()
            .is_some_and(|c| is_ident(c) || c == '$')
        {
            continue;
        }
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let name: String = item.trim().chars().take_while(|c| is_ident(*c)).collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// What a leaf's file names above it, one line each.
fn leaf_violations(src: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    for leaf in LEAVES {
        for file in rust_files(&src.join(leaf)) {
            let text = fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                let named = crate_paths(line);
                for m in ABOVE_LEAVES.iter().filter(|m| named.contains(**m)) {
                    bad.push(format!(
                        "{}:{}: names crate::{m}: {}",
                        file.display(),
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
    }
    bad
}

/// The top-level module a file under `src` belongs to (`None`: the crate root).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?.to_string();
    match first.strip_suffix(".rs") {
        Some("lib") => None,
        Some(m) => Some(m.to_string()),
        None => Some(first),
    }
}

/// Which top-level modules each one's code imports or names: `crate::X` outside comments, except in `pub use`
/// lines (re-exports that keep an old path working are not dependencies of the module's code).
fn import_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files = rust_files(src);
    let modules: BTreeSet<String> = files.iter().filter_map(|f| module_of(src, f)).collect();
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for file in &files {
        let Some(from) = module_of(src, file) else {
            continue;
        };
        let text = fs::read_to_string(file).unwrap();
        let mut code = String::new();
        let mut in_pub_use = false;
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with("pub use ") {
                in_pub_use = !t.trim_end().ends_with(';');
                continue;
            }
            if in_pub_use {
                in_pub_use = !t.trim_end().ends_with(';');
                continue;
            }
            if t.starts_with("//") {
                continue;
            }
            code.push_str(line.split(" // ").next().unwrap_or(line));
            code.push('\n');
        }
        // Grouped imports span lines: join them before reading the paths.
        let code = code.replace('\n', " ");
        for to in crate_paths(&code) {
            if to != from && modules.contains(&to) {
                graph.get_mut(&from).unwrap().insert(to);
            }
        }
    }
    graph
}

/// A cycle of the graph, if it has one (the modules along it, the first repeated at the end).
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    // 0: not visited, 1: on the current path, 2: done.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(m.to_string(), 1);
        path.push(m.to_string());
        for next in &graph[m] {
            match state.get(next.as_str()).copied().unwrap_or(0) {
                1 => {
                    let at = path.iter().position(|p| p == next).unwrap();
                    let mut cycle = path[at..].to_vec();
                    cycle.push(next.clone());
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(next, graph, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(m.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if state.get(m.as_str()).copied().unwrap_or(0) == 0 {
            let mut path = Vec::new();
            if let Some(c) = visit(m, graph, &mut state, &mut path) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn leaves_do_not_import_upward() {
    let bad = leaf_violations(&src());
    assert!(
        bad.is_empty(),
        "hop/ and tunnel/ are leaves:\n{}",
        bad.join("\n")
    );
}

#[test]
fn modules_import_each_other_without_a_cycle() {
    let graph = import_graph(&src());
    assert!(
        graph.contains_key("worker") && graph["worker"].contains("snapshot"),
        "the graph was read: {graph:?}"
    );
    if let Some(cycle) = find_cycle(&graph) {
        panic!("import cycle: {}\n(graph: {graph:#?})", cycle.join(" -> "));
    }
}

#[test]
fn the_checks_catch_what_they_look_for() {
    assert_eq!(
        crate_paths("use crate::{buffer::PacketBuf, worker};\nfn f() { crate::trace::record(); }"),
        ["buffer", "trace", "worker"].map(String::from).into()
    );
    assert!(crate_paths("$crate::trace::x; lwt6_crate::worker").is_empty());
    let g: BTreeMap<String, BTreeSet<String>> = [("a", "b"), ("b", "c"), ("c", "a")]
        .into_iter()
        .map(|(f, t)| (f.to_string(), [t.to_string()].into()))
        .collect();
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "c", "a"]);
}
