//! Native import on arbitrary bytes: format detection, then every importer
//! forced (as `--input-format NAME` does). No panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = looptune_core::input::import::detect(data);
    let _ = looptune_core::input::import::import_auto("n.jsonl", "n", data, true);
    let _ = looptune_core::input::import::import_auto("n.jsonl", "n", data, false);
    for format in looptune_core::input::import::format_names() {
        let _ = looptune_core::input::import::import_as(format, "n.json", "n", data, true);
    }
});
