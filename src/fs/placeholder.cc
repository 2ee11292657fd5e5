// Filled by the mount issue.
