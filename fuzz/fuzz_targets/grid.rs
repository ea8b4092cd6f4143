//! Grid TOML on arbitrary text, with a small configuration cap so that a
//! valid but huge grid is an error, not an out-of-memory. No panic; errors
//! name the grid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(e) = looptune_core::sweep::grid::parse_grid_limited(text, "g.toml", 2000) {
        let m = e.to_string();
        assert!(m.starts_with("grid g.toml") || m.contains("unknown"), "{m}");
    }
});
