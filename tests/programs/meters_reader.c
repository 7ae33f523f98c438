/*
 * meters_reader: exercises collector/include/contend/meters.h for the
 * tests of contend-meters (crates/contend-meters/tests/it/layout.rs).
 *
 *   meters_reader layout                  every offset, size and constant
 *   meters_reader read PATH METER         one meter of scope machine
 *   meters_reader publish PATH PHASE R W  claims an application slot and
 *                                         publishes its state
 *
 * Output is one "key value" pair per line; errors go to stderr as
 * "error: <errno name>" with exit status 1.
 */
#define _GNU_SOURCE
#include <contend/meters.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OFF(type, field) printf("%s.%s %zu\n", #type, #field, offsetof(struct type, field))

static int fail(const char *what)
{
    fprintf(stderr, "error: %s: %s\n", what, errno == EPROTO ? "EPROTO" : strerror(errno));
    return 1;
}

int main(int argc, char **argv)
{
    struct contend_meters bb;
    if (argc >= 2 && strcmp(argv[1], "layout") == 0) {
        printf("version %u\n", CONTEND_METERS_VERSION);
        printf("header_size %zu\n", sizeof(struct contend_meters_header));
        printf("slot_size %zu\n", sizeof(struct contend_meter_slot));
        printf("app_slot_size %zu\n", sizeof(struct contend_meters_app_slot));
        OFF(contend_meters_header, version);
        OFF(contend_meters_header, header_size);
        OFF(contend_meters_header, endian_check);
        OFF(contend_meters_header, meter_slot_size);
        OFF(contend_meters_header, meter_slots);
        OFF(contend_meters_header, app_slot_size);
        OFF(contend_meters_header, app_slots);
        OFF(contend_meters_header, flags);
        OFF(contend_meters_header, meter_table);
        OFF(contend_meters_header, app_table);
        OFF(contend_meters_header, writer_pid);
        OFF(contend_meters_header, generation);
        OFF(contend_meters_header, interval_ns);
        OFF(contend_meters_header, heartbeat_ns);
        OFF(contend_meters_header, meters_used);
        OFF(contend_meters_header, window_ns);
        OFF(contend_meters_header, host);
        OFF(contend_meter_slot, seq);
        OFF(contend_meter_slot, name);
        OFF(contend_meter_slot, unit);
        OFF(contend_meter_slot, scope);
        OFF(contend_meter_slot, scope_id);
        OFF(contend_meter_slot, object);
        OFF(contend_meter_slot, label);
        OFF(contend_meter_slot, trigger_state);
        OFF(contend_meter_slot, flags);
        OFF(contend_meter_slot, value);
        OFF(contend_meter_slot, avg);
        OFF(contend_meter_slot, min);
        OFF(contend_meter_slot, max);
        OFF(contend_meter_slot, high);
        OFF(contend_meter_slot, low);
        OFF(contend_meter_slot, updates);
        OFF(contend_meter_slot, trigger_changes);
        OFF(contend_meter_slot, time_ns);
        OFF(contend_meter_slot, window_samples);
        OFF(contend_meters_app_slot, seq);
        OFF(contend_meters_app_slot, pid);
        OFF(contend_meters_app_slot, phase);
        OFF(contend_meters_app_slot, threads_running);
        OFF(contend_meters_app_slot, threads_waiting);
        OFF(contend_meters_app_slot, time_ns);
        OFF(contend_meters_app_slot, updates);
        return 0;
    }
    if (argc == 4 && strcmp(argv[1], "read") == 0) {
        struct contend_meter_value v;
        int slot;
        if (contend_meters_open(&bb, argv[2], 0) != 0)
            return fail("open");
        slot = contend_meters_find(&bb, argv[3], CONTEND_SCOPE_MACHINE, 0);
        if (slot < 0 || contend_meters_read(&bb, slot, &v) != 0)
            return fail("read");
        printf("slot %d\nvalue %.17g\navg %.17g\nmin %.17g\nmax %.17g\nhigh %.17g\nlow %.17g\n",
               slot, v.value, v.avg, v.min, v.max, v.high, v.low);
        printf("updates %llu\ntrigger_state %u\ntrigger_changes %llu\n",
               (unsigned long long)v.updates, v.trigger_state,
               (unsigned long long)v.trigger_changes);
        contend_meters_close(&bb);
        return 0;
    }
    if (argc == 6 && strcmp(argv[1], "publish") == 0) {
        int slot;
        if (contend_meters_open(&bb, argv[2], 1) != 0)
            return fail("open");
        slot = contend_meters_claim_app(&bb);
        if (slot < 0)
            return fail("claim");
        contend_meters_publish_app(&bb, slot, argv[3], (uint32_t)atoi(argv[4]),
                                   (uint32_t)atoi(argv[5]));
        printf("app_slot %d\n", slot);
        contend_meters_close(&bb);
        return 0;
    }
    fprintf(stderr, "usage: meters_reader layout | read PATH METER | publish PATH PHASE R W\n");
    return 2;
}
