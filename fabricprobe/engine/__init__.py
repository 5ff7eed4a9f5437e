"""The sweep engine: plan the points, measure each (buffers, validation, timing, the device path),
stop hung points, show progress, and store every point as it completes."""
