//! What the process uses: resident memory (now and at its peak) and open file descriptors, read
//! from `/proc/self` (zero where there is no such file system).

/// The process's resources.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Process {
    pub rss_bytes: u64,
    pub peak_rss_bytes: u64,
    pub open_files: u64,
}

/// The process's resources now.
pub fn process() -> Process {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            * 1024
    };
    let open_files = std::fs::read_dir("/proc/self/fd")
        // The directory handle read_dir holds is one of them.
        .map(|d| d.count().saturating_sub(1) as u64)
        .unwrap_or(0);
    Process {
        rss_bytes: kib("VmRSS:"),
        peak_rss_bytes: kib("VmHWM:"),
        open_files,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_file_opened_is_counted() {
        if !std::path::Path::new("/proc/self/fd").exists() {
            return;
        }
        let before = super::process();
        assert!(before.rss_bytes > 0 && before.peak_rss_bytes >= before.rss_bytes);
        let files: Vec<std::fs::File> = (0..5)
            .map(|_| std::fs::File::open("/proc/self/status").unwrap())
            .collect();
        // Other tests run in parallel threads and open files too: at least ours are counted.
        assert!(super::process().open_files >= 5, "{:?}", super::process());
        drop(files);
    }
}
