from fabricprobe.cli.main import main

raise SystemExit(main())
