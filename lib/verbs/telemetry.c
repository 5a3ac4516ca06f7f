/* SPDX-License-Identifier: BSD-3-Clause
 * Copyright(c) 2026 dpib authors
 */
/*
 * DPDK telemetry: the devices and their counters, for dpdk-telemetry.py and
 * anything else that reads the process's telemetry socket
 * (/var/run/dpdk/dpib_<pid>/dpdk_telemetry.v2 as root):
 *
 *   /dpib/devices              the device names
 *   /dpib/counters,<device>    every counter of dpib_counters(), and
 *                              mbufs_in_use
 *   /dpib/info,<device>        port, addresses, MTUs, engine lcore
 *   /dpib/engines,<device>     per engine: its QPs, queue, frames, cycles
 *   /dpib/cc,<device>          congestion control, paced QPs' rates
 *
 * Callbacks run on the telemetry thread; counters are read with relaxed
 * loads, as dpib_counters() does: each value is exact, the set is not a
 * snapshot.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <rte_telemetry.h>

#include "verbs_priv.h"

static struct ib_dev *
dev_by_name(const char *name)
{
	struct dpib_device *d;
	unsigned int n, i;

	if (name == NULL)
		return NULL;
	d = dpib_devices(&n);
	for (i = 0; i < n; i++)
		if (strcmp(hca_conf(d[i].hw)->name, name) == 0)
			return d[i].hw;
	return NULL;
}

static int
tel_devices(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct dpib_device *d;
	unsigned int n, i;

	(void)cmd;
	(void)params;
	d = dpib_devices(&n);
	rte_tel_data_start_array(t, RTE_TEL_STRING_VAL);
	for (i = 0; i < n; i++)
		rte_tel_data_add_array_string(t, hca_conf(d[i].hw)->name);
	return 0;
}

static int
tel_counters(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct ib_dev *hw = dev_by_name(params);
	const char *const *names;
	uint64_t v[256];
	int i, n;

	(void)cmd;
	if (hw == NULL)
		return -EINVAL;
	n = hca_counters(hw, &names, v, (int)RTE_DIM(v));
	rte_tel_data_start_dict(t);
	for (i = 0; i < n && i < (int)RTE_DIM(v); i++)
		rte_tel_data_add_dict_u64(t, names[i], v[i]);
	rte_tel_data_add_dict_u64(t, "mbufs_in_use", hca_mbufs_in_use(hw));
	return 0;
}

static int
tel_info(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct ib_dev *hw = dev_by_name(params);
	const struct ib_dev_conf *c;
	char ip[INET6_ADDRSTRLEN];

	(void)cmd;
	if (hw == NULL)
		return -EINVAL;
	c = hca_conf(hw);
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_string(t, "port", c->port);
	rte_tel_data_add_dict_int(t, "port_id", hca_port_id(hw));
	if (c->ip != 0 && inet_ntop(AF_INET, &c->ip, ip, sizeof(ip)) != NULL)
		rte_tel_data_add_dict_string(t, "ip", ip);
	if (c->has_ip6 && inet_ntop(AF_INET6, c->ip6, ip, sizeof(ip)) != NULL)
		rte_tel_data_add_dict_string(t, "ip6", ip);
	rte_tel_data_add_dict_int(t, "vlan", c->vlan);
	rte_tel_data_add_dict_int(t, "eth_mtu", (int)c->mtu);
	rte_tel_data_add_dict_int(t, "active_mtu", (int)hca_active_mtu(hw));
	rte_tel_data_add_dict_int(t, "engine_lcore", c->lcore);
	rte_tel_data_add_dict_int(t, "engines", (int)hca_engines(hw));
	rte_tel_data_add_dict_int(t, "loopback", c->loopback);
	rte_tel_data_add_dict_string(t, "icrc", hca_icrc_computed(hw) ? "on" :
				     "off (frames stay in memory)");
	return 0;
}

/* Each engine's share of the device: "engine_<k>" -> its figures. */
static int
tel_engines(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct ib_dev *hw = dev_by_name(params);
	struct hca_engine_stats st;
	struct rte_tel_data *e;
	uint32_t k, n;
	char key[32];

	(void)cmd;
	if (hw == NULL)
		return -EINVAL;
	n = hca_engines(hw);
	rte_tel_data_start_dict(t);
	for (k = 0; k < n; k++) {
		e = rte_tel_data_alloc();
		if (e == NULL)
			return -ENOMEM;
		hca_engine_stats(hw, k, &st);
		rte_tel_data_start_dict(e);
		rte_tel_data_add_dict_u64(e, "qps", st.qps);
		rte_tel_data_add_dict_u64(e, "queue", st.queue);
		rte_tel_data_add_dict_u64(e, "rx_packets", st.rx_packets);
		rte_tel_data_add_dict_u64(e, "tx_packets", st.tx_packets);
		rte_tel_data_add_dict_u64(e, "rx_handed", st.rx_handed);
		rte_tel_data_add_dict_u64(e, "cycles", st.cycles);
		snprintf(key, sizeof(key), "engine_%u", k);
		rte_tel_data_add_dict_container(t, key, e, 0);
	}
	return 0;
}

/*
 * Congestion control: the scheme, the line rate a QP starts from (0 until
 * the first CNP asked the port), and each paced QP's current rate
 * ("qp_<qpn>": Mbit/s); a QP at the line rate is not paced and not listed.
 */
static int
tel_cc(const char *cmd, const char *params, struct rte_tel_data *t)
{
	struct ib_dev *hw = dev_by_name(params);
	uint32_t qpn[RTE_TEL_MAX_DICT_ENTRIES - 2], mbps[RTE_DIM(qpn)];
	uint32_t i, n;
	char key[32];

	(void)cmd;
	if (hw == NULL)
		return -EINVAL;
	n = ib_dcqcn_rates(hw, qpn, mbps, RTE_DIM(qpn));
	rte_tel_data_start_dict(t);
	rte_tel_data_add_dict_string(t, "cc", hca_conf(hw)->dcqcn.disabled ?
				     "none" : "dcqcn");
	rte_tel_data_add_dict_u64(t, "line_mbps", hca_cc_line_mbps(hw));
	for (i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "qp_%u", qpn[i]);
		rte_tel_data_add_dict_u64(t, key, mbps[i]);
	}
	return 0;
}

/*
 * Registered once the devices exist, by the copy of the library that
 * created them: EAL's PMD plugins that link libibverbs.so.1 (mlx4/mlx5)
 * may load a second, idle copy of dpib into a program linked with
 * libdpib.so, and its constructors would register empty answers.
 */
void
dpib_telemetry_register(void)
{
	rte_telemetry_register_cmd("/dpib/devices", tel_devices,
				   "The dpib devices. Takes no parameters");
	rte_telemetry_register_cmd("/dpib/counters", tel_counters,
				   "A dpib device's counters. Parameter: "
				   "device name");
	rte_telemetry_register_cmd("/dpib/info", tel_info,
				   "A dpib device's port and addresses. "
				   "Parameter: device name");
	rte_telemetry_register_cmd("/dpib/engines", tel_engines,
				   "What each engine does on a dpib device. "
				   "Parameter: device name");
	rte_telemetry_register_cmd("/dpib/cc", tel_cc,
				   "A dpib device's congestion control and the "
				   "rates of its paced QPs. Parameter: device "
				   "name");
}
