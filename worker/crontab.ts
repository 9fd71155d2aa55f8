// Recurring jobs, in graphile-worker's crontab syntax. Tasks add their lines as they land.
export const crontab = "";
